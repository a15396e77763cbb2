package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code long_polling} for short-poll providers (CONTRACT §7.10): an empty fetch ignores its poll
 * timeout and returns faster than {@link ProviderFactory#shortPollThreshold()}. Three tests with the inherited
 * upper-bound test.
 */
public abstract class ShortPollingTests extends PollingBoundTests {

    private Duration threshold() {
        Duration t = factory.shortPollThreshold();
        assertTrue(t != null && !t.isNegative() && !t.isZero(), "factory.shortPollThreshold() must be positive");
        return t;
    }

    /** An empty orchestrator fetch with a 500 ms poll timeout returns empty at once. */
    @Test
    void test_short_poll_returns_immediately() {
        OrchestrationProvider p = warmedUpEmptyProvider();
        Duration threshold = threshold();
        Timed<Optional<FetchedOrchestration>> t = timedOrchFetch(p, POLL_TIMEOUT);
        assertTrue(t.result().isEmpty(), "the orchestrator queue is empty");
        assertTrue(t.elapsed().compareTo(threshold) < 0, "a short-poll fetch should return immediately: took "
                + t.elapsed().toMillis() + " ms, threshold " + threshold.toMillis() + " ms");
    }

    /** An empty worker fetch with a 500 ms poll timeout returns empty at once. */
    @Test
    void test_short_poll_work_item_returns_immediately() {
        OrchestrationProvider p = warmedUpEmptyProvider();
        Duration threshold = threshold();
        Timed<Optional<FetchedWorkItem>> t = timedWorkFetch(p, POLL_TIMEOUT);
        assertTrue(t.result().isEmpty(), "the worker queue is empty");
        assertTrue(t.elapsed().compareTo(threshold) < 0, "a short-poll fetch should return immediately: took "
                + t.elapsed().toMillis() + " ms, threshold " + threshold.toMillis() + " ms");
    }
}
