package io.pgdurable.postgres.batch;

import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.PostgresTestFactory;
import java.time.Duration;

/**
 * The conformance kit's factory with batched terminal acks on (16 per flush): the worker-queue modules then prove
 * that a batch size above 1 keeps the contract of {@code ackWorkItem} (outcomes, lease checks, cancellation,
 * sessions, poison handling).
 */
public class BatchedAckTestFactory extends PostgresTestFactory {
    @Override
    protected PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return builder.ackBatchSize(16).ackFlushIdle(Duration.ofMillis(1));
    }
}
