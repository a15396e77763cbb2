package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link BulkDeletionTests} with long polling on. */
class PgLongBulkDeletionTest extends BulkDeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
