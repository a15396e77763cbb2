package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link CapabilityFilteringTests} against the PostgreSQL provider. */
class PgCapabilityFilteringTest extends CapabilityFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
