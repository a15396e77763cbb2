package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link MultiExecutionTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgMultiExecutionTest extends MultiExecutionTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
