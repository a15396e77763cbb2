package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link ManagementTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgManagementTest extends ManagementTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
