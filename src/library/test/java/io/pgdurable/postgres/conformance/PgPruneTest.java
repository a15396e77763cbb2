package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link PruneTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgPruneTest extends PruneTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
