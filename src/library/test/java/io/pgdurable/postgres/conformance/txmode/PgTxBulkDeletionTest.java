package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link BulkDeletionTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxBulkDeletionTest extends BulkDeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
