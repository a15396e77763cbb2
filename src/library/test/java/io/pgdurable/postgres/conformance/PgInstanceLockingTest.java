package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link InstanceLockingTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgInstanceLockingTest extends InstanceLockingTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
