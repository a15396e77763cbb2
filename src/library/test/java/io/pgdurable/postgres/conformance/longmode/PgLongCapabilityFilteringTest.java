package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link CapabilityFilteringTests} with long polling on. */
class PgLongCapabilityFilteringTest extends CapabilityFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
