package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link SessionsTests} with long polling on. */
class PgLongSessionsTest extends SessionsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
