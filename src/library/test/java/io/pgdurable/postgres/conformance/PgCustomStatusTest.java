package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link CustomStatusTests} against the PostgreSQL provider. */
class PgCustomStatusTest extends CustomStatusTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
