package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link PoisonMessageTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgPoisonMessageTest extends PoisonMessageTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
