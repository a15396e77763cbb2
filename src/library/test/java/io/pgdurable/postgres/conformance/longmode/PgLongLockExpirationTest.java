package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link LockExpirationTests} with long polling on. */
class PgLongLockExpirationTest extends LockExpirationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
