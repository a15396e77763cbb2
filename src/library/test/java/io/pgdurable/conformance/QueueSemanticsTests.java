package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code queue_semantics} (CONTRACT §7.7): FIFO peek-lock worker queue, atomic worker ack,
 * delayed visibility on both queues, redelivery after a lost token, and the orphan QueueMessage rule (§4.9).
 */
public abstract class QueueSemanticsTests extends ConformanceTestBase {

    /** Five activities come out in enqueue order, then the queue is empty. */
    @Test
    void test_worker_queue_fifo_ordering() {
        OrchestrationProvider p = newProvider();
        for (long i = 1; i <= 5; i++) {
            p.enqueueForWorker(activity("instance-A", i, "Activity" + i, "input" + i));
        }
        for (long i = 1; i <= 5; i++) {
            WorkItem.ActivityExecute a = asActivity(fetchWorkRequired(p, "activity " + i + " of 5"));
            assertEquals(i, a.id(), "FIFO order");
            assertEquals("Activity" + i, a.name());
            assertEquals("input" + i, a.input());
        }
        assertNoWorkItem(p, "all five were fetched");
    }

    /** A fetched item is invisible until acked; after the ack the queue is empty. */
    @Test
    void test_worker_peek_lock_semantics() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("instance-A", 1, "Activity1", "input1"));
        FetchedWorkItem w = fetchWorkRequired(p, "the activity");
        asActivity(w);
        assertNoWorkItem(p, "the leased item is invisible");

        p.ackWorkItem(w.lockToken(), activityCompleted("instance-A", 1, "result1"));
        assertNoWorkItem(p, "the acked item is deleted");
    }

    /** A worker ack removes the item and its completion becomes the instance's only message. */
    @Test
    void test_worker_ack_atomicity() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        ack(p, f.lockToken(), 1, List.of(startedEvent(1)), ExecutionMetadata.empty());

        p.enqueueForWorker(activity("instance-A", 1, "Activity1", "input1"));
        FetchedWorkItem w = fetchWorkRequired(p, "the activity");
        p.ackWorkItem(w.lockToken(), activityCompleted("instance-A", 1, "result1"));
        assertNoWorkItem(p, "the acked item is deleted");

        FetchedOrchestration next = fetchOrchRequired(p, "the completion");
        assertEquals("instance-A", next.item().instance());
        assertEquals(1, next.item().messages().size(), "only the completion: " + next.item().messages());
        WorkItem.ActivityCompleted c = assertInstanceOf(WorkItem.ActivityCompleted.class,
                next.item().messages().get(0));
        assertEquals(1, c.id());
        assertEquals("result1", c.result(), "the completion payload is stored verbatim");
    }

    /** A TimerFired enqueued with a 5 s delay is invisible until the delay has passed. */
    @Test
    void test_timer_delayed_visibility() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        ack(p, f.lockToken(), 1, List.of(startedEvent(1)), ExecutionMetadata.empty());

        Duration delay = Duration.ofSeconds(5);
        p.enqueueForOrchestrator(new WorkItem.TimerFired("instance-A", 1, 1, 0), delay);
        long enqueuedAt = now();
        assertNoOrchItem(p, "the timer is not visible yet");
        sleepUntil(enqueuedAt, delay.dividedBy(2));
        assertNoOrchItem(p, "the timer is not visible half way through its delay");

        sleepUntil(enqueuedAt, delay.plus(EXPIRY_MARGIN));
        FetchedOrchestration fired = fetchOrchRequired(p, "the timer after its delay");
        assertEquals("instance-A", fired.item().instance());
        assertEquals(1, fired.item().messages().size());
        assertInstanceOf(WorkItem.TimerFired.class, fired.item().messages().get(0));
    }

    /** A worker item whose token was lost is redelivered once its lease expires. */
    @Test
    void test_lost_lock_token_handling() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("instance-A", 1, "Activity1", "input1"));
        FetchedWorkItem lost = fetchWorkRequired(p, lockTimeout(), "the activity");
        long lockedAt = now();
        assertNoWorkItem(p, "the item is leased");
        sleepUntilHalfLock(lockedAt);
        assertNoWorkItem(p, "the lease still holds half way through its timeout");

        sleepPastLockExpiry(lockedAt);
        FetchedWorkItem again = fetchWorkRequired(p, lockTimeout(), "the item after its lease expired");
        assertEquals(1, asActivity(again).id());
        assertNotEquals(lost.lockToken(), again.lockToken());
    }

    /** A newly enqueued worker item can be fetched at once. */
    @Test
    void test_worker_item_immediate_visibility() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-immediate-vis", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "a newly enqueued item");
        assertEquals("TestActivity", asActivity(w).name());
        p.ackWorkItem(w.lockToken(), activityCompleted("test-immediate-vis", 1, "done"));
    }

    /** An item abandoned with a delay is skipped in favour of the next one and comes back after the delay. */
    @Test
    void test_worker_delayed_visibility_skips_future_items() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-delayed-vis", 1, "Activity1", "first"));
        p.enqueueForWorker(activity("test-delayed-vis", 2, "Activity2", "second"));

        FetchedWorkItem w1 = fetchWorkRequired(p, lockTimeout(), "the first item");
        assertEquals(1, asActivity(w1).id());
        Duration delay = Duration.ofMillis(500);
        p.abandonWorkItem(w1.lockToken(), delay, false);
        long abandonedAt = now();

        FetchedWorkItem w2 = fetchWorkRequired(p, lockTimeout(), "the second item while the first is delayed");
        assertEquals(2, asActivity(w2).id(), "the delayed item is skipped");
        assertNoWorkItem(p, "nothing else is visible");

        sleepUntil(abandonedAt, delay.plus(EXPIRY_MARGIN));
        FetchedWorkItem w3 = fetchWorkRequired(p, lockTimeout(), "the first item after its delay");
        assertEquals(1, asActivity(w3).id());

        p.ackWorkItem(w2.lockToken(), activityCompleted("test-delayed-vis", 2, "done"));
        p.ackWorkItem(w3.lockToken(), activityCompleted("test-delayed-vis", 1, "done"));
    }

    /** QueueMessages for an instance that never started are dropped; those of an existing instance are delivered. */
    @Test
    void test_orphan_queue_messages_dropped() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(new WorkItem.QueueMessage("orphan-test", "ConfigUpdate", "v1"), null);
        p.enqueueForOrchestrator(new WorkItem.QueueMessage("orphan-test", "ConfigUpdate", "v2"), null);

        assertNoOrchItem(p, "orphan QueueMessages are not delivered");
        assertNoOrchItem(p, "orphan QueueMessages were deleted, not left queued");

        // Had they been kept, they would join the batch of a later start.
        p.enqueueForOrchestrator(startItem("orphan-test"), null);
        FetchedOrchestration started = fetchOrchRequired(p, "a later start of the orphans' instance");
        assertEquals("orphan-test", started.item().instance());
        assertEquals(1, started.item().messages().size(), "the orphans are gone: " + started.item().messages());
        assertInstanceOf(WorkItem.StartOrchestration.class, started.item().messages().get(0));
        ack(p, started.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());

        createInstance(p, "orphan-test-existing");
        p.enqueueForOrchestrator(new WorkItem.QueueMessage("orphan-test-existing", "ConfigUpdate", "v3"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the QueueMessage of an existing instance");
        assertEquals("orphan-test-existing", f.item().instance());
        assertTrue(f.item().messages().stream().anyMatch(m -> m instanceof WorkItem.QueueMessage q
                        && q.name().equals("ConfigUpdate") && q.data().equals("v3")),
                "the QueueMessage of an existing instance is delivered: " + f.item().messages());
        ackEmpty(p, f.lockToken(), f.item().executionId());
    }
}
