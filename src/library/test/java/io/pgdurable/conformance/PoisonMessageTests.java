package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code poison_message} (CONTRACT §7.9, §4.1): attempt counts start at 1, grow with every claim
 * (abandon or lease expiry), are kept per message, honour {@code ignoreAttempt} with a floor of zero, and a batch
 * reports the highest count among its messages.
 */
public abstract class PoisonMessageTests extends ConformanceTestBase {

    private static void enqueueActivity(OrchestrationProvider p, String instance, long id, String name) {
        p.enqueueForWorker(activity(instance, id, name, "{}"));
    }

    private FetchedOrchestration fetchOrchAttempt(OrchestrationProvider p, String instance, int expected,
                                                  String why) {
        FetchedOrchestration f = fetchOrchRequired(p, lockTimeout(), why);
        assertEquals(instance, f.item().instance());
        assertEquals(expected, f.attemptCount(), why + ": attempt count");
        assertEquals(expected, factory.getMaxAttemptCount(instance), why + ": stored attempt count");
        return f;
    }

    private FetchedWorkItem fetchWorkAttempt(OrchestrationProvider p, int expected, String why) {
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), why);
        assertEquals(expected, w.attemptCount(), why + ": attempt count");
        return w;
    }

    /** The first orchestrator fetch reports attempt 1. */
    @Test
    void orchestration_attempt_count_starts_at_one() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("poison-test-1"), null);
        assertEquals(0, factory.getMaxAttemptCount("poison-test-1"), "an unfetched message has attempt count 0");
        FetchedOrchestration f = fetchOrchAttempt(p, "poison-test-1", 1, "the first fetch");
        ackEmpty(p, f.lockToken(), 1);
        assertEquals(0, factory.getMaxAttemptCount("poison-test-1"), "the acked message is gone");
    }

    /** Fetch / abandon cycles report attempts 1, 2, 3. */
    @Test
    void orchestration_attempt_count_increments_on_refetch() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("poison-test-2"), null);
        FetchedOrchestration f1 = fetchOrchAttempt(p, "poison-test-2", 1, "the first fetch");
        p.abandonOrchestrationItem(f1.lockToken(), null, false);
        FetchedOrchestration f2 = fetchOrchAttempt(p, "poison-test-2", 2, "the second fetch");
        p.abandonOrchestrationItem(f2.lockToken(), null, false);
        FetchedOrchestration f3 = fetchOrchAttempt(p, "poison-test-2", 3, "the third fetch");
        ackEmpty(p, f3.lockToken(), 1);
    }

    /** The first worker fetch reports attempt 1. */
    @Test
    void worker_attempt_count_starts_at_one() {
        OrchestrationProvider p = newProvider();
        enqueueActivity(p, "poison-test-3", 1, "TestActivity");
        FetchedWorkItem w = fetchWorkAttempt(p, 1, "the first fetch");
        assertEquals("poison-test-3", asActivity(w).instance());
        p.ackWorkItem(w.lockToken(), activityCompleted("poison-test-3", 1, "done"));
    }

    /** A re-fetch after the worker lease expired (no abandon) reports attempt 2. */
    @Test
    void worker_attempt_count_increments_on_lock_expiry() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        enqueueActivity(p, "poison-test-4", 1, "TestActivity");
        FetchedWorkItem w1 = fetchWorkAttempt(p, 1, "the first fetch");
        long lockedAt = now();
        sleepUntilHalfLock(lockedAt);
        assertNoWorkItem(p, "the lease still holds half way through its timeout");

        sleepPastLockExpiry(lockedAt);
        FetchedWorkItem w2 = fetchWorkAttempt(p, 2, "the fetch after the lease expired");
        assertNotEquals(w1.lockToken(), w2.lockToken());
        p.ackWorkItem(w2.lockToken(), activityCompleted("poison-test-4", 1, "done"));
    }

    /** Two different worker items each start at attempt 1. */
    @Test
    void attempt_count_is_per_message() {
        OrchestrationProvider p = newProvider();
        enqueueActivity(p, "poison-test-5a", 1, "Activity1");
        enqueueActivity(p, "poison-test-5b", 2, "Activity2");

        FetchedWorkItem w1 = fetchWorkAttempt(p, 1, "the first item");
        FetchedWorkItem w2 = fetchWorkAttempt(p, 1, "the second item");
        WorkItem.ActivityExecute a1 = asActivity(w1);
        WorkItem.ActivityExecute a2 = asActivity(w2);
        assertNotEquals(a1.id(), a2.id(), "two different items");

        p.ackWorkItem(w1.lockToken(), activityCompleted(a1.instance(), a1.id(), "done"));
        p.ackWorkItem(w2.lockToken(), activityCompleted(a2.instance(), a2.id(), "done"));
    }

    /** Worker: 1, abandon, 2, abandon with ignoreAttempt, 2 again. */
    @Test
    void abandon_work_item_ignore_attempt_decrements() {
        OrchestrationProvider p = newProvider();
        enqueueActivity(p, "poison-test-ignore-1", 1, "TestActivity");
        FetchedWorkItem w1 = fetchWorkAttempt(p, 1, "the first fetch");
        p.abandonWorkItem(w1.lockToken(), null, false);
        FetchedWorkItem w2 = fetchWorkAttempt(p, 2, "the fetch after a counted abandon");
        p.abandonWorkItem(w2.lockToken(), null, true);
        FetchedWorkItem w3 = fetchWorkAttempt(p, 2, "the fetch after an ignored abandon");
        p.ackWorkItem(w3.lockToken(), activityCompleted("poison-test-ignore-1", 1, "done"));
    }

    /** Orchestration: 1, abandon, 2, abandon with ignoreAttempt, 2 again. */
    @Test
    void abandon_orchestration_item_ignore_attempt_decrements() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("poison-test-ignore-2"), null);
        FetchedOrchestration f1 = fetchOrchAttempt(p, "poison-test-ignore-2", 1, "the first fetch");
        p.abandonOrchestrationItem(f1.lockToken(), null, false);
        FetchedOrchestration f2 = fetchOrchAttempt(p, "poison-test-ignore-2", 2, "the fetch after a counted abandon");
        p.abandonOrchestrationItem(f2.lockToken(), null, true);
        assertEquals(1, factory.getMaxAttemptCount("poison-test-ignore-2"), "the ignored attempt was taken back");
        FetchedOrchestration f3 = fetchOrchAttempt(p, "poison-test-ignore-2", 2, "the fetch after an ignored abandon");
        ackEmpty(p, f3.lockToken(), 1);
    }

    /** Repeated ignored abandons keep reporting attempt 1: the count never goes below zero. */
    @Test
    void ignore_attempt_never_goes_negative() {
        OrchestrationProvider p = newProvider();
        enqueueActivity(p, "poison-test-never-neg", 1, "TestActivity");
        FetchedWorkItem w1 = fetchWorkAttempt(p, 1, "the first fetch");
        p.abandonWorkItem(w1.lockToken(), null, true);
        FetchedWorkItem w2 = fetchWorkAttempt(p, 1, "the fetch after one ignored abandon");
        p.abandonWorkItem(w2.lockToken(), null, true);
        FetchedWorkItem w3 = fetchWorkAttempt(p, 1, "the fetch after two ignored abandons");
        p.ackWorkItem(w3.lockToken(), activityCompleted("poison-test-never-neg", 1, "done"));
    }

    /** A batch of an old message (third fetch) and a new one (first fetch) reports attempt 3. */
    @Test
    void max_attempt_count_across_message_batch() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("poison-batch-test"), null);
        FetchedOrchestration f1 = fetchOrchAttempt(p, "poison-batch-test", 1, "the first fetch");
        assertEquals(1, f1.item().messages().size());
        p.abandonOrchestrationItem(f1.lockToken(), null, false);

        FetchedOrchestration f2 = fetchOrchAttempt(p, "poison-batch-test", 2, "the second fetch");
        p.enqueueForOrchestrator(activityCompleted("poison-batch-test", 1, "activity result"), null);
        p.abandonOrchestrationItem(f2.lockToken(), null, false);

        FetchedOrchestration f3 = fetchOrchAttempt(p, "poison-batch-test", 3, "the batch of old and new message");
        assertEquals(2, f3.item().messages().size(), "both messages in one batch: " + f3.item().messages());
        ackEmpty(p, f3.lockToken(), 1);
    }
}
