package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** The long-poll pair and the upper bound of the polling module. */
class PgLongPollingTest extends LongPollingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
