package io.pgdurable.postgres.batch;

import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.ProviderFactory;

/** The conformance module {@link LockExpirationTests} with batched terminal acks (ackBatchSize 16). */
class BatchedAckLockExpirationTest extends LockExpirationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new BatchedAckTestFactory();
    }
}
