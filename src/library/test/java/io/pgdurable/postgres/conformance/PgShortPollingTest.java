package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.ShortPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link ShortPollingTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgShortPollingTest extends ShortPollingTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
