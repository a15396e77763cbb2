package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link TagFilteringTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgTagFilteringTest extends TagFilteringTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
