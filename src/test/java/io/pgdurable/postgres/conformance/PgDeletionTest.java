package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link DeletionTests} against the PostgreSQL provider. */
class PgDeletionTest extends DeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
