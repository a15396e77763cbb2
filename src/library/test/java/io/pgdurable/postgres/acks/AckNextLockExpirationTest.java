package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link LockExpirationTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_AND_FETCH_NEXT}. */
class AckNextLockExpirationTest extends LockExpirationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_AND_FETCH_NEXT);
    }
}
