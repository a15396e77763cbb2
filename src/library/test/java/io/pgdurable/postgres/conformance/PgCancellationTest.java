package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link CancellationTests} against the PostgreSQL provider. */
class PgCancellationTest extends CancellationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
