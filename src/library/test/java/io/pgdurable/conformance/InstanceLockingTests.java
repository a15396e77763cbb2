package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code instance_locking} (CONTRACT §7.4): one fetcher at a time per instance, tokens are unique,
 * an ack consumes only the messages its fetch tagged, and concurrent fetchers never share an instance.
 */
public abstract class InstanceLockingTests extends ConformanceTestBase {

    /** While locked no other fetch gets the instance; after the lock expires it is fetched with a new token. */
    @Test
    void test_exclusive_instance_lock() throws InterruptedException {
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
        assertNotEquals(first.lockToken(), second.lockToken(), "a new fetch issues a new token");
    }

    /** Five fetches of five instances give five distinct tokens. */
    @Test
    void test_lock_token_uniqueness() {
        OrchestrationProvider p = newProvider();
        for (int i = 0; i < 5; i++) {
            p.enqueueForOrchestrator(startItem("inst-" + i), null);
        }
        Set<String> tokens = new HashSet<>();
        Set<String> instances = new HashSet<>();
        for (int i = 0; i < 5; i++) {
            FetchedOrchestration f = fetchOrchRequired(p, "instance " + (i + 1) + " of 5");
            tokens.add(f.lockToken());
            instances.add(f.item().instance());
        }
        assertEquals(5, instances.size(), "five different instances were fetched: " + instances);
        assertEquals(5, tokens.size(), "all lock tokens are unique: " + tokens);
    }

    /** Ack and abandon with a bogus token both fail and leave the real lock in place. */
    @Test
    void test_invalid_lock_token_rejection() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");

        expectPermanentError("an ack with an invalid token", () -> ackEmpty(p, "invalid-token", 1));
        expectPermanentError("an abandon with an invalid token",
                () -> p.abandonOrchestrationItem("invalid-token", null, false));
        assertNoOrchItem(p, "the real lock is still held");

        // The real token still works.
        ack(p, f.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());
        assertEquals(1, p.read("instance-A").size());
    }

    /** Ten concurrent fetchers over ten instances get every instance exactly once (none gives up after a race). */
    @Test
    void test_concurrent_instance_fetching() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        for (int i = 0; i < 10; i++) {
            p.enqueueForOrchestrator(startItem("inst-" + i), null);
        }
        List<Outcome<Optional<FetchedOrchestration>>> outcomes = runConcurrently(10, i -> () -> fetchOrch(p));

        List<String> fetched = new ArrayList<>();
        for (Outcome<Optional<FetchedOrchestration>> o : outcomes) {
            o.get().ifPresent(f -> fetched.add(f.item().instance()));
        }
        assertEquals(10, fetched.size(), "every fetcher gets an instance: " + fetched);
        assertEquals(10, new HashSet<>(fetched).size(), "each instance is fetched exactly once: " + fetched);
    }

    /** Completions that arrive while the instance is locked wait for the lock and then come in one batch. */
    @Test
    void test_completions_arriving_during_lock_blocked() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration first = fetchOrchRequired(p, lockTimeout(), "the start");
        long lockedAt = now();
        assertEquals("instance-A", first.item().instance());

        for (long id = 1; id <= 3; id++) {
            p.enqueueForOrchestrator(activityCompleted("instance-A", id, "result-" + id), null);
        }
        assertNoOrchItem(p, "the instance is still locked");
        sleepUntilHalfLock(lockedAt);
        assertNoOrchItem(p, "the lock still holds half way through its timeout");

        sleepPastLockExpiry(lockedAt);
        FetchedOrchestration f = fetchOrchRequired(p, lockTimeout(), "the instance after lock expiry");
        assertEquals("instance-A", f.item().instance());
        List<WorkItem> messages = f.item().messages();
        assertEquals(4, messages.size(), "start plus 3 completions: " + messages);
        assertInstanceOf(WorkItem.StartOrchestration.class, messages.get(0), "the oldest message comes first");
        assertEquals(List.of(1L, 2L, 3L), completionIds(messages), "completions in arrival order");
    }

    /** Locking one instance does not block another, which can be acked and fetched again meanwhile. */
    @Test
    void test_cross_instance_lock_isolation() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "instance-A");
        createInstance(p, "instance-B");
        p.enqueueForOrchestrator(startItem("instance-A"), null);
        p.enqueueForOrchestrator(startItem("instance-B"), null);

        FetchedOrchestration x = fetchOrchRequired(p, "the first instance");
        FetchedOrchestration y = fetchOrchRequired(p, "the second instance while the first is locked");
        assertEquals(Set.of("instance-A", "instance-B"), Set.of(x.item().instance(), y.item().instance()),
                "both instances are fetched, one each");

        ack(p, y.lockToken(), 1, List.of(), testOrchMetadata());
        p.enqueueForOrchestrator(activityCompleted(y.item().instance(), 1, "done"), null);

        FetchedOrchestration y2 = fetchOrchRequired(p, "the acked instance again while the other stays locked");
        assertEquals(y.item().instance(), y2.item().instance());
        assertEquals(List.of(1L), completionIds(y2.item().messages()));
        assertNotEquals(x.item().instance(), y2.item().instance());
        assertNoOrchItem(p, "the first instance is still locked");
    }

    /** An ack deletes only the messages its fetch saw; one that arrived during the lock survives. */
    @Test
    void test_message_tagging_during_lock() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "instance-A");
        p.enqueueForOrchestrator(activityCompleted("instance-A", 1, "msg1"), null);
        p.enqueueForOrchestrator(activityCompleted("instance-A", 2, "msg2"), null);

        FetchedOrchestration f = fetchOrchRequired(p, "the two completions");
        assertEquals("instance-A", f.item().instance());
        assertEquals(List.of(1L, 2L), completionIds(f.item().messages()));
        assertEquals(2, f.item().messages().size());

        p.enqueueForOrchestrator(activityCompleted("instance-A", 3, "msg3"), null);
        ackEmpty(p, f.lockToken(), 1);

        FetchedOrchestration f2 = fetchOrchRequired(p, "the message that arrived during the lock");
        assertEquals("instance-A", f2.item().instance());
        assertEquals(1, f2.item().messages().size(), "only the late message: " + f2.item().messages());
        WorkItem.ActivityCompleted late = assertInstanceOf(WorkItem.ActivityCompleted.class,
                f2.item().messages().get(0));
        assertEquals(3, late.id());
        assertEquals("msg3", late.result());
    }

    /** With one tagged and two late messages, the ack removes only the tagged one. */
    @Test
    void test_ack_only_affects_locked_messages() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "instance-A");
        p.enqueueForOrchestrator(activityCompleted("instance-A", 1, "msg1"), null);

        FetchedOrchestration f = fetchOrchRequired(p, "the first completion");
        assertEquals(1, f.item().messages().size());

        p.enqueueForOrchestrator(activityCompleted("instance-A", 2, "msg2"), null);
        p.enqueueForOrchestrator(activityCompleted("instance-A", 3, "msg3"), null);
        assertNoOrchItem(p, "the instance is locked");

        ackEmpty(p, f.lockToken(), 1);
        FetchedOrchestration f2 = fetchOrchRequired(p, "the two late messages");
        assertEquals("instance-A", f2.item().instance());
        assertEquals(2, f2.item().messages().size(), "messages 2 and 3: " + f2.item().messages());
        assertEquals(List.of(2L, 3L), completionIds(f2.item().messages()));
    }

    /** Many threads (on two nodes) fetch the same instance at once: exactly one wins and keeps the lock. */
    @Test
    void test_multi_threaded_lock_contention() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        OrchestrationProvider peer = peerProvider();
        p.enqueueForOrchestrator(startItem("contention-instance"), null);

        List<Outcome<Optional<FetchedOrchestration>>> outcomes =
                runConcurrently(10, i -> () -> fetchOrch(i % 2 == 0 ? p : peer));

        List<FetchedOrchestration> winners = new ArrayList<>();
        for (Outcome<Optional<FetchedOrchestration>> o : outcomes) {
            o.get().ifPresent(winners::add);
        }
        assertEquals(1, winners.size(), "exactly one thread acquires the instance");
        assertEquals("contention-instance", winners.get(0).item().instance());
        assertNoOrchItem(p, "the winner still holds the lock");
        assertNoOrchItem(peer, "the winner still holds the lock (other node)");
    }

    /** More fetchers than instances, on two nodes: no instance is handed out twice. */
    @Test
    void test_multi_threaded_no_duplicate_processing() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        OrchestrationProvider peer = peerProvider();
        int instances = 20;
        for (int i = 0; i < instances; i++) {
            p.enqueueForOrchestrator(startItem("dup-test-" + i), null);
        }

        List<Outcome<Optional<String>>> outcomes = runConcurrently(instances * 2, i -> () -> {
            OrchestrationProvider node = i % 2 == 0 ? p : peer;
            for (int attempt = 0; ; attempt++) {
                try {
                    return fetchOrch(node).map(f -> f.item().instance());
                } catch (ProviderException e) {
                    if (!e.retryable() || attempt >= 2) {
                        throw e;
                    }
                    Thread.sleep(10L * (attempt + 1));
                }
            }
        });

        List<String> fetched = new ArrayList<>();
        for (Outcome<Optional<String>> o : outcomes) {
            if (o.ok()) {
                o.value().ifPresent(fetched::add);
            } else if (!(o.error() instanceof ProviderException pe && pe.retryable())) {
                fail("a concurrent fetch failed with a non-retryable error", o.error());
            }
        }
        assertFalse(fetched.isEmpty(), "some instances are fetched");
        assertEquals(fetched.size(), new HashSet<>(fetched).size(), "no instance is fetched twice: " + fetched);
        assertTrue(fetched.size() <= instances, "cannot fetch more instances than exist");
    }

    /** The holder never acks: a concurrent fetch sees nothing, and after expiry another thread takes over. */
    @Test
    void test_multi_threaded_lock_expiration_recovery() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("expiration-instance"), null);
        CountDownLatch held = new CountDownLatch(1);
        long[] lockedAt = new long[1];

        List<Outcome<Optional<FetchedOrchestration>>> outcomes = runConcurrently(3, i -> () -> {
            switch (i) {
                case 0: {
                    // The holder: takes the lock and never acks.
                    Optional<FetchedOrchestration> r = fetchOrch(p, lockTimeout());
                    lockedAt[0] = now();
                    held.countDown();
                    return r;
                }
                case 1: {
                    // A contender while the lock is live.
                    assertTrue(held.await(CONCURRENCY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), "holder");
                    return fetchOrch(p, lockTimeout());
                }
                default: {
                    // The recoverer after the lock expired.
                    assertTrue(held.await(CONCURRENCY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), "holder");
                    sleepPastLockExpiry(lockedAt[0]);
                    return fetchOrch(p, lockTimeout());
                }
            }
        });

        FetchedOrchestration holder = outcomes.get(0).get()
                .orElseThrow(() -> new AssertionError("the holder thread must acquire the instance"));
        assertEquals("expiration-instance", holder.item().instance());
        assertTrue(outcomes.get(1).get().isEmpty(), "the instance is locked while the holder's lock lives");
        FetchedOrchestration recovered = outcomes.get(2).get()
                .orElseThrow(() -> new AssertionError("another thread acquires the instance after expiry"));
        assertEquals("expiration-instance", recovered.item().instance());
        assertNotEquals(holder.lockToken(), recovered.lockToken(), "the recovering fetch gets a new token");
    }
}
