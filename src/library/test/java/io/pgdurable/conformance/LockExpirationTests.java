package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code lock_expiration} (CONTRACT §7.5): instance locks and worker leases expire, can be
 * released early by abandon, renewed while live, and not renewed or used once expired or consumed.
 */
public abstract class LockExpirationTests extends ConformanceTestBase {

    /** After expiry the instance is fetched with a new token and the old token can no longer ack. */
    @Test
    void test_lock_expires_after_timeout() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration first = fetchOrchRequired(p, lockTimeout(), "the start");
        long lockedAt = now();
        assertNoOrchItem(p, "the instance is locked");
        sleepUntilHalfLock(lockedAt);
        assertNoOrchItem(p, "the lock still holds half way through its timeout");

        sleepPastLockExpiry(lockedAt);
        FetchedOrchestration second = fetchOrchRequired(p, lockTimeout(), "the instance after lock expiry");
        assertEquals("instance-A", second.item().instance());
        assertNotEquals(first.lockToken(), second.lockToken(), "a new token after expiry");

        expectPermanentError("an ack with the expired token", () -> ackEmpty(p, first.lockToken(), 1));
        // The new holder is unaffected by the stale ack.
        ack(p, second.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());
        assertEquals(1, p.read("instance-A").size());
    }

    /** Abandon makes the instance fetchable at once, without waiting for the lock timeout. */
    @Test
    void test_abandon_releases_lock_immediately() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration first = fetchOrchRequired(p, LONG_LOCK, "the start");
        assertNoOrchItem(p, "the instance is locked");

        p.abandonOrchestrationItem(first.lockToken(), null, false);
        FetchedOrchestration second = fetchOrchRequired(p, LONG_LOCK, "the instance right after abandon");
        assertEquals("instance-A", second.item().instance());
        assertEquals(1, second.item().messages().size(), "the abandoned message is back");
        assertInstanceOf(WorkItem.StartOrchestration.class, second.item().messages().get(0));
        assertNotEquals(first.lockToken(), second.lockToken());
    }

    /** A message that arrives during the lock is fetchable immediately after a successful ack. */
    @Test
    void test_lock_renewal_on_ack() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration first = fetchOrchRequired(p, LONG_LOCK, "the start");
        assertNoOrchItem(p, "the instance is locked");

        p.enqueueForOrchestrator(startItem("instance-A"), null);
        assertNoOrchItem(p, "the new message waits for the lock");

        ack(p, first.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());
        FetchedOrchestration second = fetchOrchRequired(p, LONG_LOCK, "the late message right after the ack");
        assertEquals("instance-A", second.item().instance());
        assertEquals(1, second.item().messages().size(), "only the late message: " + second.item().messages());
    }

    /** Concurrent fetchers before expiry all get nothing; after expiry exactly one of them wins. */
    @Test
    void test_concurrent_lock_attempts_respect_expiration() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        fetchOrchRequired(p, lockTimeout(), "the start");
        long lockedAt = now();

        List<Outcome<Optional<FetchedOrchestration>>> before =
                runConcurrently(5, i -> () -> fetchOrch(p, lockTimeout()));
        for (Outcome<Optional<FetchedOrchestration>> o : before) {
            assertTrue(o.get().isEmpty(), "no fetcher gets the instance before its lock expires");
        }

        sleepPastLockExpiry(lockedAt);
        List<Outcome<Optional<FetchedOrchestration>>> after =
                runConcurrently(5, i -> () -> fetchOrch(p, lockTimeout()));
        List<FetchedOrchestration> winners = new ArrayList<>();
        for (Outcome<Optional<FetchedOrchestration>> o : after) {
            o.get().ifPresent(winners::add);
        }
        assertEquals(1, winners.size(), "exactly one fetcher takes over the expired lock");
        assertEquals("instance-A", winners.get(0).item().instance());
    }

    /** Renewing a live worker lease succeeds and the item stays invisible; the token keeps working. */
    @Test
    void test_worker_lock_renewal_success() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-instance", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "the activity");
        assertNoWorkItem(p, "the item is leased");

        Thread.sleep(100);
        p.renewWorkItemLock(w.lockToken(), lockTimeout());
        assertNoWorkItem(p, "the item stays leased after renewal");

        p.ackWorkItem(w.lockToken(), activityCompleted("test-instance", 1, "done"));
        assertNoWorkItem(p, "the acked item is gone");
    }

    /** Renewing with a token that was never issued fails permanently. */
    @Test
    void test_worker_lock_renewal_invalid_token() {
        OrchestrationProvider p = newProvider();
        expectPermanentError("renewing an unknown worker token",
                () -> p.renewWorkItemLock("invalid-token-123", Duration.ofSeconds(30)));
    }

    /** Renewing after the worker lease expired fails permanently. */
    @Test
    void test_worker_lock_renewal_after_expiration() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-instance", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "the activity");
        long lockedAt = now();
        assertNoWorkItem(p, "the item is leased before expiry");

        sleepPastLockExpiry(lockedAt);
        expectPermanentError("renewing an expired worker lease",
                () -> p.renewWorkItemLock(w.lockToken(), lockTimeout()));
    }

    /** A renewal at 0.6 T for T keeps the item leased at 1.0 T; it becomes available when the renewed lease ends. */
    @Test
    void test_worker_lock_renewal_extends_timeout() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        String instance = "test-lock-renewal-extends";
        Duration lock = lockTimeout();
        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        ack(p, f.lockToken(), 1, List.of(startedEvent(1)), List.of(activity(instance, 1, "TestActivity", "test")),
                List.of(), testOrchMetadata().withStatus("Running", null));

        FetchedWorkItem w = fetchWorkRequired(p, lock, "the activity scheduled by the ack");
        long fetchedAt = now();
        sleepUntil(fetchedAt, lock.multipliedBy(6).dividedBy(10));
        p.renewWorkItemLock(w.lockToken(), lock);
        long renewedAt = now();

        sleepUntil(fetchedAt, lock.plus(EXPIRY_MARGIN));
        assertNoWorkItem(p, "the item is still leased after its original timeout thanks to the renewal");

        sleepUntil(renewedAt, lock.plus(EXPIRY_MARGIN));
        FetchedWorkItem again = fetchWorkRequired(p, lock, "the item once the renewed lease ended");
        assertEquals(1, asActivity(again).id());
    }

    /** Renewing after the item was acked fails permanently. */
    @Test
    void test_worker_lock_renewal_after_ack() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-instance", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "the activity");
        p.ackWorkItem(w.lockToken(), activityCompleted("test-instance", 1, "done"));

        expectPermanentError("renewing an acked worker item",
                () -> p.renewWorkItemLock(w.lockToken(), lockTimeout()));
    }

    /** An abandoned work item is fetchable again at once, with a new token. */
    @Test
    void test_abandon_work_item_releases_lock() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-abandon-work", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "the activity");
        asActivity(w);
        assertNoWorkItem(p, "the item is leased");

        p.abandonWorkItem(w.lockToken(), null, false);
        FetchedWorkItem w2 = fetchWorkRequired(p, lockTimeout(), "the item right after abandon");
        WorkItem.ActivityExecute a = asActivity(w2);
        assertEquals("test-abandon-work", a.instance());
        assertNotEquals(w.lockToken(), w2.lockToken(), "a new token after abandon");

        p.ackWorkItem(w2.lockToken(), activityCompleted("test-abandon-work", 1, "done"));
    }

    /** An item abandoned with a 500 ms delay stays hidden until the delay passes. */
    @Test
    void test_abandon_work_item_with_delay() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("test-abandon-delay", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "the activity");

        Duration delay = Duration.ofMillis(500);
        p.abandonWorkItem(w.lockToken(), delay, false);
        long abandonedAt = now();
        assertNoWorkItem(p, "the item is delayed, not immediately available");

        sleepUntil(abandonedAt, delay.plus(EXPIRY_MARGIN));
        FetchedWorkItem w2 = fetchWorkRequired(p, lockTimeout(), "the item after the delay");
        assertEquals("test-abandon-delay", asActivity(w2).instance());
        p.ackWorkItem(w2.lockToken(), activityCompleted("test-abandon-delay", 1, "done"));
    }

    /** An ack after the worker lease expired fails and the item can still be fetched. */
    @Test
    void test_worker_ack_fails_after_lock_expiry() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(activity("ack-expiry-test", 1, "TestActivity", "test"));
        FetchedWorkItem w = fetchWorkRequired(p, lockTimeout(), "the activity");
        long lockedAt = now();
        assertNoWorkItem(p, "the item is leased before expiry");

        sleepPastLockExpiry(lockedAt);
        expectPermanentError("acking after the worker lease expired",
                () -> p.ackWorkItem(w.lockToken(), activityCompleted("ack-expiry-test", 1, "done")));
        assertNoOrchItem(p, "the rejected ack must not enqueue its completion");

        FetchedWorkItem again = fetchWorkRequired(p, Duration.ofSeconds(5), "the item after the rejected ack");
        assertEquals("ack-expiry-test", asActivity(again).instance());
        assertNotEquals(w.lockToken(), again.lockToken());
    }

    /** Renewing an orchestration lock works while it lives and fails once it expired. */
    @Test
    void test_orchestration_lock_renewal_after_expiration() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("orch-renewal-expiry"), null);
        FetchedOrchestration f = fetchOrchRequired(p, lockTimeout(), "the start");

        p.renewOrchestrationItemLock(f.lockToken(), lockTimeout());
        long renewedAt = now();
        assertNoOrchItem(p, "the instance is locked");

        sleepPastLockExpiry(renewedAt);
        expectPermanentError("renewing an expired orchestration lock",
                () -> p.renewOrchestrationItemLock(f.lockToken(), lockTimeout()));
    }
}
