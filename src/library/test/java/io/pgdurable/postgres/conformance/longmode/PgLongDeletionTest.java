package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link DeletionTests} with long polling on. */
class PgLongDeletionTest extends DeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
