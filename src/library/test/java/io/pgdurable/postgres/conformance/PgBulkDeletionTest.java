package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link BulkDeletionTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgBulkDeletionTest extends BulkDeletionTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
