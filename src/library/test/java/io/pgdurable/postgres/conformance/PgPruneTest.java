package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.conformance.PruneTests;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link PruneTests} against the PostgreSQL provider. */
class PgPruneTest extends PruneTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
