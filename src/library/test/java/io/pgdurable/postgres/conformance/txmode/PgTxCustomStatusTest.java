package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link CustomStatusTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxCustomStatusTest extends CustomStatusTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
