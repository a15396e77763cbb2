package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link PoisonMessageTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_AND_FETCH_NEXT}. */
class AckNextPoisonMessageTest extends PoisonMessageTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_AND_FETCH_NEXT);
    }
}
