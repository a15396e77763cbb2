package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link DeletionTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxDeletionTest extends DeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
