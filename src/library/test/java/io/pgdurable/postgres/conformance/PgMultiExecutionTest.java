package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link MultiExecutionTests} against the PostgreSQL provider. */
class PgMultiExecutionTest extends MultiExecutionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
