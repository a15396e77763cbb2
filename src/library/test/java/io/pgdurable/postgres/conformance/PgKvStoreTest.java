package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link KvStoreTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgKvStoreTest extends KvStoreTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
