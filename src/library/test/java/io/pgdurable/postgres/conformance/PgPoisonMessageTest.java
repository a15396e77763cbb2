package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link PoisonMessageTests} against the PostgreSQL provider. */
class PgPoisonMessageTest extends PoisonMessageTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
