package io.pgdurable.postgres.batch;

import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link QueueSemanticsTests} with batched terminal acks (ackBatchSize 16). */
class BatchedAckQueueSemanticsTest extends QueueSemanticsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new BatchedAckTestFactory();
    }
}
