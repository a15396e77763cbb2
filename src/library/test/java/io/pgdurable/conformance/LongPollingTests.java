package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code long_polling} for long-poll providers (CONTRACT §7.10, §6.1): an empty fetch waits for
 * its whole poll timeout before returning empty. Three tests with the inherited upper-bound test.
 */
public abstract class LongPollingTests extends PollingBoundTests {

    /** An empty orchestrator fetch with a 500 ms poll timeout returns empty after at least 500 ms. */
    @Test
    void test_long_poll_waits_for_timeout() {
        OrchestrationProvider p = warmedUpEmptyProvider();
        Timed<Optional<FetchedOrchestration>> t = timedOrchFetch(p, POLL_TIMEOUT);
        assertTrue(t.result().isEmpty(), "the orchestrator queue is empty");
        assertTrue(t.elapsed().compareTo(POLL_TIMEOUT) >= 0, "a long-poll fetch should wait for its timeout: took "
                + t.elapsed().toMillis() + " ms, timeout " + POLL_TIMEOUT.toMillis() + " ms");
    }

    /** An empty worker fetch with a 500 ms poll timeout returns empty after at least 500 ms. */
    @Test
    void test_long_poll_work_item_waits_for_timeout() {
        OrchestrationProvider p = warmedUpEmptyProvider();
        Timed<Optional<FetchedWorkItem>> t = timedWorkFetch(p, POLL_TIMEOUT);
        assertTrue(t.result().isEmpty(), "the worker queue is empty");
        assertTrue(t.elapsed().compareTo(POLL_TIMEOUT) >= 0, "a long-poll fetch should wait for its timeout: took "
                + t.elapsed().toMillis() + " ms, timeout " + POLL_TIMEOUT.toMillis() + " ms");
    }
}
