package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link TagFilteringTests} against the PostgreSQL provider. */
class PgTagFilteringTest extends TagFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
