package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link ErrorHandlingTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgErrorHandlingTest extends ErrorHandlingTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
