package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link AtomicityTests} against the PostgreSQL provider. */
class PgAtomicityTest extends AtomicityTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
