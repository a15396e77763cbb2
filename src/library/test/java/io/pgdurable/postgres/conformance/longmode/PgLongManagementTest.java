package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link ManagementTests} with long polling on. */
class PgLongManagementTest extends ManagementTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
