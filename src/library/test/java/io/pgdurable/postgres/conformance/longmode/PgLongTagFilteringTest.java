package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link TagFilteringTests} with long polling on. */
class PgLongTagFilteringTest extends TagFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
