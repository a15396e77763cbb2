package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link InstanceCreationTests} against the PostgreSQL provider. */
class PgInstanceCreationTest extends InstanceCreationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
