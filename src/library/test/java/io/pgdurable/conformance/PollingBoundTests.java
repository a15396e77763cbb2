package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code long_polling}, the part every provider runs (CONTRACT §7.10, §6.1): a fetch never blocks
 * much longer than its poll timeout. Bind {@link ShortPollingTests} or {@link LongPollingTests}, which add the pair of
 * tests for the provider's polling style; this class holds the common upper-bound test.
 */
public abstract class PollingBoundTests extends ConformanceTestBase {

    /** How far beyond its poll timeout a fetch may return. */
    protected static final Duration POLL_TOLERANCE = Duration.ofMillis(200);

    /** The poll timeout of the short/long pair. */
    protected static final Duration POLL_TIMEOUT = Duration.ofMillis(500);

    /**
     * A provider on empty storage, with one non-waiting fetch on each queue already done, so that the timed calls
     * measure polling behaviour rather than connection set-up.
     */
    protected OrchestrationProvider warmedUpEmptyProvider() {
        OrchestrationProvider p = newProvider();
        assertFalse(fetchOrch(p).isPresent(), "the orchestrator queue of a fresh provider is empty");
        assertFalse(fetchWork(p).isPresent(), "the worker queue of a fresh provider is empty");
        return p;
    }

    /** Result and duration of one timed fetch. */
    protected record Timed<T>(T result, Duration elapsed) {}

    protected static Timed<Optional<FetchedOrchestration>> timedOrchFetch(OrchestrationProvider p,
                                                                          Duration pollTimeout) {
        long start = System.nanoTime();
        Optional<FetchedOrchestration> r = p.fetchOrchestrationItem(LONG_LOCK, pollTimeout, null);
        return new Timed<>(r, Duration.ofNanos(System.nanoTime() - start));
    }

    protected static Timed<Optional<FetchedWorkItem>> timedWorkFetch(OrchestrationProvider p, Duration pollTimeout) {
        long start = System.nanoTime();
        Optional<FetchedWorkItem> r = p.fetchWorkItem(LONG_LOCK, pollTimeout, null, TagFilter.defaultOnly());
        return new Timed<>(r, Duration.ofNanos(System.nanoTime() - start));
    }

    /** An empty orchestrator fetch with a 300 ms poll timeout returns empty within 500 ms. */
    @Test
    void test_fetch_respects_timeout_upper_bound() {
        OrchestrationProvider p = warmedUpEmptyProvider();
        Duration pollTimeout = Duration.ofMillis(300);
        Timed<Optional<FetchedOrchestration>> t = timedOrchFetch(p, pollTimeout);
        assertTrue(t.result().isEmpty(), "the queue is empty");
        Duration bound = pollTimeout.plus(POLL_TOLERANCE);
        assertTrue(t.elapsed().compareTo(bound) < 0,
                "the fetch blocked too long: " + t.elapsed().toMillis() + " ms, bound " + bound.toMillis() + " ms");
    }
}
