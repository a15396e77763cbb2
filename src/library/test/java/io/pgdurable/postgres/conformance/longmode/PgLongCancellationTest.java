package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link CancellationTests} with long polling on. */
class PgLongCancellationTest extends CancellationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
