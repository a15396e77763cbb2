package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link KvStoreTests} with long polling on. */
class PgLongKvStoreTest extends KvStoreTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
