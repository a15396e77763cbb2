package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link QueueSemanticsTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_AND_FETCH_NEXT}. */
class AckNextQueueSemanticsTest extends QueueSemanticsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_AND_FETCH_NEXT);
    }
}
