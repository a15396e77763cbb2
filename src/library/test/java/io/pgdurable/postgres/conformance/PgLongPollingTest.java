package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link LongPollingTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgLongPollingTest extends LongPollingTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
