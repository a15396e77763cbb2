package io.pgdurable.postgres.acks;

import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link TagFilteringTests} with every worker ack sent as {@code AckViaTestFactory.Via.ACK_LIST}. */
class AckListTagFilteringTest extends TagFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new AckViaTestFactory(AckViaTestFactory.Via.ACK_LIST);
    }
}
