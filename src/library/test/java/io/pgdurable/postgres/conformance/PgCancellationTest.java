package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link CancellationTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgCancellationTest extends CancellationTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
