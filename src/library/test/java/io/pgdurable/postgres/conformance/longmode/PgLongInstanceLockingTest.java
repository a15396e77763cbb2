package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link InstanceLockingTests} with long polling on. */
class PgLongInstanceLockingTest extends InstanceLockingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
