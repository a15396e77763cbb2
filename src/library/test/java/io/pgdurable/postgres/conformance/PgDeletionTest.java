package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link DeletionTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgDeletionTest extends DeletionTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
