package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link ErrorHandlingTests} against the PostgreSQL provider. */
class PgErrorHandlingTest extends ErrorHandlingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
