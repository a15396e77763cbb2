package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link CancellationTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxCancellationTest extends CancellationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
