package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ShortPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link ShortPollingTests} against the PostgreSQL provider. */
class PgShortPollingTest extends ShortPollingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
