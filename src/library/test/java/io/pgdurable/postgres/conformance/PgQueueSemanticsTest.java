package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link QueueSemanticsTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgQueueSemanticsTest extends QueueSemanticsTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
