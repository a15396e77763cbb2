package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link CustomStatusTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgCustomStatusTest extends CustomStatusTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
