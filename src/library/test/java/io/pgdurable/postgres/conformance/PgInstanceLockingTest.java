package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link InstanceLockingTests} against the PostgreSQL provider. */
class PgInstanceLockingTest extends InstanceLockingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
