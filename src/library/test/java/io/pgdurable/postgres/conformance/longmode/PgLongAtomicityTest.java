package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link AtomicityTests} with long polling on. */
class PgLongAtomicityTest extends AtomicityTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
