package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link LockExpirationTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_LIST}. */
class AckListLockExpirationTest extends LockExpirationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_LIST);
    }
}
