package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link SessionsTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_AND_FETCH_NEXT}. */
class AckNextSessionsTest extends SessionsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_AND_FETCH_NEXT);
    }
}
