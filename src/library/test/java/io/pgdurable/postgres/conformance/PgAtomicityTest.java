package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link AtomicityTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgAtomicityTest extends AtomicityTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
