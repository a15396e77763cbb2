package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link PoisonMessageTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_LIST}. */
class AckListPoisonMessageTest extends PoisonMessageTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_LIST);
    }
}
