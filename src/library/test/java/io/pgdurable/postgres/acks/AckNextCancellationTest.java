package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link CancellationTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_AND_FETCH_NEXT}. */
class AckNextCancellationTest extends CancellationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_AND_FETCH_NEXT);
    }
}
