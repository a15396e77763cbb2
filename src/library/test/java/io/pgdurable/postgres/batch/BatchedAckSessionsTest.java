package io.pgdurable.postgres.batch;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link SessionsTests} with batched terminal acks (ackBatchSize 16). */
class BatchedAckSessionsTest extends SessionsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new BatchedAckTestFactory();
    }
}
