package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link BulkDeletionTests} against the PostgreSQL provider. */
class PgBulkDeletionTest extends BulkDeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
