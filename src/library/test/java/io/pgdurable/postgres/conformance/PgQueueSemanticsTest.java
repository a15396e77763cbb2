package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link QueueSemanticsTests} against the PostgreSQL provider. */
class PgQueueSemanticsTest extends QueueSemanticsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
