package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link SessionsTests} against the PostgreSQL provider. */
class PgSessionsTest extends SessionsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
