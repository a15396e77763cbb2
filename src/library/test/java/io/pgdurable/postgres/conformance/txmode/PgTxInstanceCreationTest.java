package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link InstanceCreationTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxInstanceCreationTest extends InstanceCreationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
