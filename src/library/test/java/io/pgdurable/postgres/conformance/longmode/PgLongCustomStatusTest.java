package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link CustomStatusTests} with long polling on. */
class PgLongCustomStatusTest extends CustomStatusTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
