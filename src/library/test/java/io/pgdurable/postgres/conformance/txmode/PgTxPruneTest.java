package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link PruneTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxPruneTest extends PruneTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
