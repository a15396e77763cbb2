package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.PostgresTestFactory;

/** Runs the conformance module {@link KvStoreTests} against the PostgreSQL provider. */
class PgKvStoreTest extends KvStoreTests {
    @Override
    protected ProviderFactory newFactory() {
        return new PostgresTestFactory();
    }
}
