package io.pgdurable.postgres.batch;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link PoisonMessageTests} with batched terminal acks (ackBatchSize 16). */
class BatchedAckPoisonMessageTest extends PoisonMessageTests {
    @Override
    protected ProviderFactory newFactory() {
        return new BatchedAckTestFactory();
    }
}
