package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link ManagementTests} against the PostgreSQL provider. */
class PgManagementTest extends ManagementTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
