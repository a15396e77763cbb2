package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link PruneTests} with long polling on. */
class PgLongPruneTest extends PruneTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
