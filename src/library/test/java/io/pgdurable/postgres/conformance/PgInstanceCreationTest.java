package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link InstanceCreationTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgInstanceCreationTest extends InstanceCreationTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
