package io.pgdurable.postgres.batch;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link CancellationTests} with batched terminal acks (ackBatchSize 16). */
class BatchedAckCancellationTest extends CancellationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new BatchedAckTestFactory();
    }
}
