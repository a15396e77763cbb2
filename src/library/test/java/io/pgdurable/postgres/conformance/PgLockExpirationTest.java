package io.pgdurable.postgres.conformance;

import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.params.Parameter;

/** Runs the conformance module {@link LockExpirationTests} in every {@link ConformanceMode} that lists it. */
@ConformanceBinding
class PgLockExpirationTest extends LockExpirationTests {
    @Parameter
    ConformanceMode mode;

    @Override
    protected ProviderFactory newFactory() {
        return mode.newFactory();
    }
}
