package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link SessionsTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgSessionsTest extends SessionsTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
