package io.pgdurable.conformance;

import io.pgdurable.spi.OrchestrationProvider;
import java.time.Duration;

/**
 * What the conformance kit needs from a provider implementation. One factory serves one test: the kit calls
 * {@link #close()} after the test, which closes every provider it created and removes their storage.
 */
public interface ProviderFactory extends AutoCloseable {

    /** A fresh provider on its own empty storage (for PostgreSQL: a new schema). */
    OrchestrationProvider createProvider();

    /** A second provider on the same storage as the most recent {@link #createProvider()} (a second node). */
    OrchestrationProvider createPeerProvider();

    /** The lock timeout that expiry tests wait out; keep it short (1–2 s). */
    default Duration lockTimeout() {
        return Duration.ofSeconds(1);
    }

    /** How fast an empty short-poll fetch must return. */
    default Duration shortPollThreshold() {
        return Duration.ofMillis(100);
    }

    /** True when fetches with a poll timeout park until work arrives (long polling). */
    default boolean longPolling() {
        return false;
    }

    /** Overwrites every stored history row of the instance with data that cannot be decoded. */
    void corruptInstanceHistory(String instance);

    /** MAX(attempt_count) over the instance's orchestrator-queue rows, 0 when it has none. */
    int getMaxAttemptCount(String instance);

    @Override
    void close();
}
