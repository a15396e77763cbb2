package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link CapabilityFilteringTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgCapabilityFilteringTest extends CapabilityFilteringTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
