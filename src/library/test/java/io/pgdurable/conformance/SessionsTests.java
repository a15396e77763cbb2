package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code sessions} (CONTRACT §7.16, §4.3, §2.9–§2.14): session-bound activities go to the owner
 * of a live session lease, unowned or lapsed sessions are claimable by anyone, session and work-item leases are
 * independent, keep-alive renewal skips idle and lapsed sessions, and cleanup removes only lapsed sessions without
 * queued items.
 */
public abstract class SessionsTests extends ConformanceTestBase {

    /** The runtime's default session lease. */
    protected static final Duration SESSION_LEASE = Duration.ofSeconds(30);
    /**
     * A session lease short enough to wait out, and long enough that a claim, an ack and the next call fit inside it
     * on a loaded 2-core machine (at 200 ms two such windows were overrun at a load average of 8).
     */
    protected static final Duration SHORT_SESSION_LEASE = Duration.ofMillis(400);
    /** Work-item lease for tests that do not wait for it. */
    protected static final Duration WORK_LOCK = Duration.ofSeconds(5);
    /** An idle timeout that no test reaches. */
    protected static final Duration NOT_IDLE = Duration.ofSeconds(300);

    // ------------------------------------------------------------------ module helpers

    protected static WorkItem.ActivityExecute sessionActivity(String instance, long id, String sessionId) {
        return new WorkItem.ActivityExecute(instance, 1, id, "SessionActivity", "{}", sessionId, null);
    }

    protected static WorkItem.ActivityExecute plainActivity(String instance, long id) {
        return new WorkItem.ActivityExecute(instance, 1, id, "PlainActivity", "{}", null, null);
    }

    protected static SessionFetchConfig owner(String ownerId) {
        return new SessionFetchConfig(ownerId, SESSION_LEASE);
    }

    protected static SessionFetchConfig owner(String ownerId, Duration sessionLease) {
        return new SessionFetchConfig(ownerId, sessionLease);
    }

    /** One worker fetch as {@code session} (null = no session support), default tag filter, no waiting. */
    protected static Optional<FetchedWorkItem> fetchAs(OrchestrationProvider p, Duration workLock,
                                                       SessionFetchConfig session) {
        Optional<FetchedWorkItem> r = p.fetchWorkItem(workLock, Duration.ZERO, session, TagFilter.defaultOnly());
        assertNotNull(r, "fetchWorkItem returned null instead of an Optional");
        r.ifPresent(f -> {
            assertNotNull(f.lockToken(), "fetched work item has no lock token");
            assertTrue(f.attemptCount() >= 1, "attempt count of a fetched item is at least 1");
        });
        return r;
    }

    protected static Optional<FetchedWorkItem> fetchAs(OrchestrationProvider p, SessionFetchConfig session) {
        return fetchAs(p, WORK_LOCK, session);
    }

    protected static FetchedWorkItem fetchAsRequired(OrchestrationProvider p, Duration workLock,
                                                     SessionFetchConfig session, String why) {
        Optional<FetchedWorkItem> r = fetchAs(p, workLock, session);
        assertTrue(r.isPresent(), "expected a work item for " + describe(session) + ": " + why);
        return r.get();
    }

    protected static FetchedWorkItem fetchAsRequired(OrchestrationProvider p, SessionFetchConfig session,
                                                     String why) {
        return fetchAsRequired(p, WORK_LOCK, session, why);
    }

    /** Fetches as {@code session} and checks the item's activity id and session id. */
    protected static FetchedWorkItem fetchExpected(OrchestrationProvider p, SessionFetchConfig session,
                                                   long expectedId, String expectedSession, String why) {
        FetchedWorkItem f = fetchAsRequired(p, session, why);
        WorkItem.ActivityExecute a = asActivity(f);
        assertEquals(expectedId, a.id(), "activity id (" + why + ")");
        assertEquals(expectedSession, a.sessionId(), "session id (" + why + ")");
        return f;
    }

    protected static void assertNothingFor(OrchestrationProvider p, SessionFetchConfig session, String why) {
        fetchAs(p, session).ifPresent(f -> fail("expected no work item for " + describe(session) + " (" + why
                + ") but fetched " + f.item()));
    }

    private static String describe(SessionFetchConfig session) {
        return session == null ? "a fetch without session support" : "owner '" + session.ownerId() + "'";
    }

    /** {@code owner} fetches the single queued item of {@code sessionId} (claiming the session) and drops it. */
    protected static long claimAndRelease(OrchestrationProvider p, SessionFetchConfig owner, String instance,
                                          long id, String sessionId) {
        p.enqueueForWorker(sessionActivity(instance, id, sessionId));
        FetchedWorkItem f = fetchExpected(p, owner, id, sessionId, "claiming " + sessionId);
        long claimedAt = now();
        p.ackWorkItem(f.lockToken(), null);
        return claimedAt;
    }

    protected static int renew(OrchestrationProvider p, String ownerId, Duration extendFor, Duration idle) {
        return p.renewSessionLock(List.of(ownerId), extendFor, idle);
    }

    // ------------------------------------------------------------------ basic routing

    /** A plain item is fetchable by any owner and by a fetch without session support. */
    @Test
    void test_non_session_items_fetchable_by_any_worker() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(plainActivity("inst-1", 1));

        FetchedWorkItem a = fetchExpected(p, owner("worker-A"), 1, null, "a plain item for worker-A");
        p.abandonWorkItem(a.lockToken(), null, false);
        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 1, null, "the same plain item for worker-B");
        p.abandonWorkItem(b.lockToken(), null, false);
        FetchedWorkItem n = fetchExpected(p, null, 1, null, "the same plain item without session support");
        p.ackWorkItem(n.lockToken(), null);
        assertNothingFor(p, owner("worker-A"), "the item was acked");
    }

    /** The first item of a session nobody holds is claimable and carries its session id. */
    @Test
    void test_session_item_claimable_when_no_session() {
        OrchestrationProvider p = newProvider();
        WorkItem.ActivityExecute item = sessionActivity("inst-1", 1, "session-1");
        p.enqueueForWorker(item);

        FetchedWorkItem f = fetchAsRequired(p, owner("worker-A"), "an unclaimed session item");
        assertEquals(item, asActivity(f), "the session item round-trips unchanged");
        assertEquals(1, f.attemptCount(), "first delivery");
    }

    /** The owner gets the next item of its session. */
    @Test
    void test_session_affinity_same_worker() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A"), "inst-1", 1, "session-1");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));

        FetchedWorkItem f = fetchExpected(p, owner("worker-A"), 2, "session-1", "the owner's next session item");
        p.ackWorkItem(f.lockToken(), null);
    }

    /** Another owner gets nothing for an owned session; the owner still gets it. */
    @Test
    void test_session_affinity_blocks_other_worker() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A"), "inst-1", 1, "session-1");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));

        assertNothingFor(p, owner("worker-B"), "session-1 is owned by worker-A");
        fetchExpected(p, owner("worker-A"), 2, "session-1", "the item was there for its owner");
    }

    /** A owns session-1 and B owns session-2: each gets only its own session's items. */
    @Test
    void test_different_sessions_different_workers() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A"), "inst-1", 1, "session-1");
        claimAndRelease(p, owner("worker-B"), "inst-2", 1, "session-2");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));
        p.enqueueForWorker(sessionActivity("inst-2", 2, "session-2"));

        FetchedWorkItem a = fetchExpected(p, owner("worker-A"), 2, "session-1", "worker-A's session");
        assertEquals("inst-1", asActivity(a).instance());
        assertNothingFor(p, owner("worker-A"), "session-2 belongs to worker-B");

        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 2, "session-2", "worker-B's session");
        assertEquals("inst-2", asActivity(b).instance());
        assertNothingFor(p, owner("worker-B"), "session-1 belongs to worker-A");
    }

    /** While A owns session-1, B gets the plain item and not the session item. */
    @Test
    void test_mixed_session_and_non_session_items() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A"), "inst-1", 1, "session-1");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));
        p.enqueueForWorker(plainActivity("inst-2", 1));

        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 1, null, "the plain item for worker-B");
        assertEquals("inst-2", asActivity(b).instance());
        assertNothingFor(p, owner("worker-B"), "the remaining item belongs to worker-A's session");
        fetchExpected(p, owner("worker-A"), 2, "session-1", "worker-A's session item");
    }

    // ------------------------------------------------------------------ session lease expiry

    /** B is blocked while A's short session lease lives and can claim the session once it lapsed. */
    @Test
    void test_session_claimable_after_lock_expiry() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        long claimedAt = claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "session-1");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));
        assertNothingFor(p, owner("worker-B"), "worker-A's session lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        fetchExpected(p, owner("worker-B"), 2, "session-1", "worker-B claims the lapsed session");
    }

    /** Without session support only plain items are returned; the session item needs a session-enabled fetch. */
    @Test
    void test_none_session_skips_session_items() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "session-1"));
        p.enqueueForWorker(plainActivity("inst-2", 2));

        FetchedWorkItem plain = fetchExpected(p, null, 2, null, "the plain item (the session item is older)");
        p.ackWorkItem(plain.lockToken(), null);
        assertNothingFor(p, null, "the session item is invisible without session support");

        fetchExpected(p, owner("worker-A"), 1, "session-1", "the session item for a session-enabled fetch");
    }

    /** One owner fetches items of three sessions and a plain item in FIFO order: no provider-side capacity limit. */
    @Test
    void test_some_session_returns_all_items() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "sess-A"));
        p.enqueueForWorker(sessionActivity("inst-2", 2, "sess-B"));
        p.enqueueForWorker(sessionActivity("inst-3", 3, "sess-C"));
        p.enqueueForWorker(plainActivity("inst-4", 4));

        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            FetchedWorkItem f = fetchAsRequired(p, owner("shared-proc"), "item " + (i + 1) + " of 4");
            ids.add(asActivity(f).id());
            p.ackWorkItem(f.lockToken(), null);
        }
        assertEquals(List.of(1L, 2L, 3L, 4L), ids, "all items in FIFO order");
        assertNothingFor(p, owner("shared-proc"), "the queue is empty");
    }

    // ------------------------------------------------------------------ keep-alive renewal

    /** Renewal counts the owner's live sessions: 1, then 2 after it claimed a second one. */
    @Test
    void test_renew_session_lock_active() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A", Duration.ofSeconds(5)), "inst-1", 1, "session-1");
        assertEquals(1, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE), "one live session is renewed");

        claimAndRelease(p, owner("worker-A"), "inst-2", 1, "session-2");
        assertEquals(2, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE), "both live sessions are renewed");
    }

    /** With a zero idle timeout every session counts as idle and nothing is renewed. */
    @Test
    void test_renew_session_lock_skips_idle() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A"), "inst-1", 1, "session-1");

        assertEquals(0, renew(p, "worker-A", SESSION_LEASE, Duration.ZERO), "an idle session is not renewed");
        assertEquals(1, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE),
                "the session itself is live: with a generous idle timeout it is renewed");
    }

    /** An owner without sessions renews nothing; neither does an empty owner list. */
    @Test
    void test_renew_session_lock_no_sessions() {
        OrchestrationProvider p = newProvider();
        assertEquals(0, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE), "no sessions at all");

        claimAndRelease(p, owner("worker-B"), "inst-1", 1, "session-1");
        assertEquals(0, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE), "worker-A owns none of them");
        assertEquals(0, p.renewSessionLock(List.of(), SESSION_LEASE, NOT_IDLE), "an empty owner list");
        assertEquals(1, renew(p, "worker-B", SESSION_LEASE, NOT_IDLE), "the owner's session is renewed");
    }

    // ------------------------------------------------------------------ cleanup

    /** A lapsed session without queued items is removed, once; a live one is not. */
    @Test
    void test_cleanup_removes_expired_no_items() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        long claimedAt = claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "session-1");
        assertEquals(0, p.cleanupOrphanedSessions(NOT_IDLE), "the session lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        assertEquals(1, p.cleanupOrphanedSessions(NOT_IDLE), "the lapsed session without items is removed");
        assertEquals(0, p.cleanupOrphanedSessions(NOT_IDLE), "it was removed by the first sweep");
    }

    /** A lapsed session that still has a queued item is kept. */
    @Test
    void test_cleanup_keeps_sessions_with_pending_items() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        long claimedAt = claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "session-1");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));
        assertNothingFor(p, owner("worker-B"), "the session lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        assertEquals(0, p.cleanupOrphanedSessions(NOT_IDLE), "a session with a pending item is kept");
        fetchExpected(p, owner("worker-B"), 2, "session-1", "the pending item of the lapsed session is claimable");
    }

    /** A live session is kept and keeps routing to its owner. */
    @Test
    void test_cleanup_keeps_active_sessions() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A", NOT_IDLE), "inst-1", 1, "session-1");

        assertEquals(0, p.cleanupOrphanedSessions(NOT_IDLE), "a live session is not removed");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "session-1"));
        assertNothingFor(p, owner("worker-B"), "the kept session still belongs to worker-A");
        assertEquals(1, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE), "worker-A still holds it");
    }

    // ------------------------------------------------------------------ activity piggyback

    /** An ack of a session item bumps the session's last activity, so a tight idle window renews it again. */
    @Test
    void test_ack_updates_session_last_activity() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        Duration idleWindow = Duration.ofMillis(200);
        p.enqueueForWorker(sessionActivity("inst-1", 1, "session-1"));
        FetchedWorkItem f = fetchExpected(p, owner("worker-A"), 1, "session-1", "the session item");
        long fetchedAt = now();

        sleepUntil(fetchedAt, idleWindow.plus(Duration.ofMillis(50)));
        assertEquals(0, renew(p, "worker-A", SESSION_LEASE, idleWindow),
                "without activity inside the idle window the session is idle");

        p.ackWorkItem(f.lockToken(), activityCompleted("inst-1", 1, "ok"));
        assertEquals(1, renew(p, "worker-A", SESSION_LEASE, idleWindow),
                "the ack counted as session activity");
    }

    /** Renewing a session item's work lock bumps the session's last activity as well. */
    @Test
    void test_renew_work_item_updates_session_last_activity() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        // Wide enough that the renewal and the session renew that follows it fit inside on a loaded CI machine
        // (at 200 ms one run saw the renewal fall outside the window).
        Duration idleWindow = Duration.ofMillis(600);
        p.enqueueForWorker(sessionActivity("inst-1", 1, "session-1"));
        FetchedWorkItem f = fetchExpected(p, owner("worker-A"), 1, "session-1", "the session item");
        long fetchedAt = now();

        sleepUntil(fetchedAt, idleWindow.plus(Duration.ofMillis(50)));
        assertEquals(0, renew(p, "worker-A", SESSION_LEASE, idleWindow),
                "without activity inside the idle window the session is idle");

        p.renewWorkItemLock(f.lockToken(), LONG_LOCK);
        assertEquals(1, renew(p, "worker-A", SESSION_LEASE, idleWindow),
                "the work-item renewal counted as session activity");
        p.ackWorkItem(f.lockToken(), null);
    }

    // ------------------------------------------------------------------ edge cases

    /** Three items of one session reach the owner in FIFO order. */
    @Test
    void test_session_items_processed_in_order() {
        OrchestrationProvider p = newProvider();
        for (long id = 1; id <= 3; id++) {
            p.enqueueForWorker(sessionActivity("inst-1", id, "session-1"));
        }
        for (long id = 1; id <= 3; id++) {
            FetchedWorkItem f = fetchExpected(p, owner("worker-A"), id, "session-1", "session item " + id);
            p.ackWorkItem(f.lockToken(), null);
        }
        assertNothingFor(p, owner("worker-A"), "all three were processed");
    }

    /** The owner of a session still receives plain items. */
    @Test
    void test_non_session_items_returned_with_session_config() {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A"), "inst-1", 1, "session-1");
        p.enqueueForWorker(plainActivity("inst-2", 1));

        FetchedWorkItem f = fetchExpected(p, owner("worker-A"), 1, null, "a plain item for a session owner");
        assertEquals("inst-2", asActivity(f).instance());
    }

    /** Two callers (two nodes' slots) sharing one owner id both get items of the owned session; others do not. */
    @Test
    void test_shared_worker_id_any_caller_can_fetch_owned_session() {
        OrchestrationProvider p = newProvider();
        OrchestrationProvider slot2 = peerProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "shared-sess"));
        p.enqueueForWorker(sessionActivity("inst-1", 2, "shared-sess"));

        FetchedWorkItem f1 = fetchExpected(p, owner("process-1"), 1, "shared-sess", "first caller claims");
        FetchedWorkItem f2 = fetchExpected(slot2, owner("process-1"), 2, "shared-sess",
                "second caller with the same owner id, while the first still holds its item");
        p.ackWorkItem(f1.lockToken(), null);
        slot2.ackWorkItem(f2.lockToken(), null);

        p.enqueueForWorker(sessionActivity("inst-1", 3, "shared-sess"));
        assertNothingFor(p, owner("process-2"), "a different owner id is blocked");
        assertNothingFor(slot2, owner("process-2"), "a different owner id is blocked on any node");
        fetchExpected(slot2, owner("process-1"), 3, "shared-sess", "the owner id still gets it");
    }

    /** Two owners racing for an unclaimed session: exactly one wins; the loser stays blocked while it holds. */
    @Test
    void test_concurrent_session_claim_only_one_wins() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        OrchestrationProvider peer = peerProvider();
        List<String> owners = List.of("worker-A", "worker-B");
        for (int round = 0; round < 5; round++) {
            String session = "contested-sess-" + round;
            p.enqueueForWorker(sessionActivity("inst-" + round, 1, session));
            p.enqueueForWorker(sessionActivity("inst-" + round, 2, session));

            List<Outcome<Optional<FetchedWorkItem>>> outcomes = runConcurrently(2,
                    i -> () -> fetchAs(i == 0 ? p : peer, owner(owners.get(i))));
            int winner = -1;
            for (int i = 0; i < 2; i++) {
                if (outcomes.get(i).get().isPresent()) {
                    assertEquals(-1, winner, "round " + round + ": both owners got an item of one session");
                    winner = i;
                }
            }
            assertNotEquals(-1, winner, "round " + round + ": one of the racing owners must win the session");
            int loser = 1 - winner;
            FetchedWorkItem won = outcomes.get(winner).get().orElseThrow();
            assertEquals(session, asActivity(won).sessionId());
            assertEquals(1, asActivity(won).id(), "the winner gets the session's oldest item");

            assertNothingFor(loser == 0 ? p : peer, owner(owners.get(loser)),
                    "round " + round + ": the loser is blocked while the winner holds the session");
            OrchestrationProvider wp = winner == 0 ? p : peer;
            FetchedWorkItem second = fetchExpected(wp, owner(owners.get(winner)), 2, session,
                    "round " + round + ": the winner gets the session's second item");
            wp.ackWorkItem(won.lockToken(), null);
            wp.ackWorkItem(second.lockToken(), null);
        }
    }

    /** After A's lease lapses B takes the session over; then A is the one blocked. */
    @Test
    void test_session_takeover_after_lock_expiry() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        long claimedAt = claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "takeover-sess");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "takeover-sess"));
        assertNothingFor(p, owner("worker-B"), "worker-A's lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 2, "takeover-sess", "worker-B takes over");
        p.ackWorkItem(b.lockToken(), null);

        p.enqueueForWorker(sessionActivity("inst-1", 3, "takeover-sess"));
        assertNothingFor(p, owner("worker-A"), "the session now belongs to worker-B");
        fetchExpected(p, owner("worker-B"), 3, "takeover-sess", "the new owner keeps the affinity");
    }

    /** After cleanup removed a session, a new item for it is claimable and re-creates a live session. */
    @Test
    void test_cleanup_then_new_item_recreates_session() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        long claimedAt = claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "ephemeral-sess");
        assertEquals(0, p.cleanupOrphanedSessions(NOT_IDLE), "the lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        assertEquals(1, p.cleanupOrphanedSessions(NOT_IDLE), "the lapsed session is removed");

        p.enqueueForWorker(sessionActivity("inst-1", 2, "ephemeral-sess"));
        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 2, "ephemeral-sess",
                "the session is claimable after cleanup");
        p.ackWorkItem(b.lockToken(), null);

        p.enqueueForWorker(sessionActivity("inst-1", 3, "ephemeral-sess"));
        assertNothingFor(p, owner("worker-A"), "the re-created session belongs to worker-B");
        assertEquals(1, renew(p, "worker-B", SESSION_LEASE, NOT_IDLE), "worker-B holds the re-created session");
    }

    /** fetch (attempt 1) → abandon → the owner refetches it (attempt 2) → ack → nothing left. */
    @Test
    void test_abandoned_session_item_retryable() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "retry-sess"));

        FetchedWorkItem first = fetchExpected(p, owner("worker-A"), 1, "retry-sess", "the session item");
        assertEquals(1, first.attemptCount());
        p.abandonWorkItem(first.lockToken(), null, false);

        FetchedWorkItem second = fetchExpected(p, owner("worker-A"), 1, "retry-sess", "the abandoned item again");
        assertEquals(2, second.attemptCount(), "the retry counts as a second attempt");
        assertNotEquals(first.lockToken(), second.lockToken());
        p.ackWorkItem(second.lockToken(), null);
        assertNothingFor(p, owner("worker-A"), "the acked item is gone");
    }

    /** Abandoning with ignoreAttempt does not count the attempt; abandoning without it does. */
    @Test
    void test_abandoned_session_item_ignore_attempt() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "ignore-sess"));
        FetchedWorkItem first = fetchExpected(p, owner("worker-A"), 1, "ignore-sess", "the session item");
        assertEquals(1, first.attemptCount());

        Duration delay = Duration.ofMillis(1);
        p.abandonWorkItem(first.lockToken(), delay, true);
        long abandonedAt = now();
        sleepUntil(abandonedAt, delay.plus(EXPIRY_MARGIN));

        FetchedWorkItem second = fetchExpected(p, owner("worker-A"), 1, "ignore-sess", "the item after abandon");
        assertEquals(1, second.attemptCount(), "ignoreAttempt keeps the attempt count");

        p.abandonWorkItem(second.lockToken(), null, false);
        FetchedWorkItem third = fetchExpected(p, owner("worker-A"), 1, "ignore-sess", "after a counted abandon");
        assertEquals(2, third.attemptCount(), "a normal abandon counts the attempt");
        p.ackWorkItem(third.lockToken(), null);
    }

    /** Renewal works while the lease lives and returns 0 once it lapsed; the session is then free. */
    @Test
    void test_renew_session_lock_after_expiry_returns_zero() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "expired-sess");
        assertEquals(1, renew(p, "worker-A", SHORT_SESSION_LEASE, NOT_IDLE), "the live lease is renewed");
        long renewedAt = now();

        sleepUntil(renewedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        assertEquals(0, renew(p, "worker-A", SESSION_LEASE, NOT_IDLE), "a lapsed lease is not re-acquired");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "expired-sess"));
        fetchExpected(p, owner("worker-B"), 2, "expired-sess", "the lapsed session is free for anyone");
    }

    /** The original owner can re-claim its own lapsed session and holds it again afterwards. */
    @Test
    void test_original_worker_reclaims_expired_session() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        long claimedAt = claimAndRelease(p, owner("worker-A", SHORT_SESSION_LEASE), "inst-1", 1, "reclaim-sess");
        p.enqueueForWorker(sessionActivity("inst-1", 2, "reclaim-sess"));
        assertNothingFor(p, owner("worker-B"), "worker-A's lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        FetchedWorkItem a = fetchExpected(p, owner("worker-A"), 2, "reclaim-sess", "worker-A re-claims");
        p.ackWorkItem(a.lockToken(), null);

        p.enqueueForWorker(sessionActivity("inst-1", 3, "reclaim-sess"));
        assertNothingFor(p, owner("worker-B"), "worker-A holds the re-claimed session");
    }

    /** The work lease lapses while the session lease lives: only the owner gets the redelivery (attempt 2). */
    @Test
    void test_activity_lock_expires_session_lock_valid_same_worker_refetches() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "sticky-sess"));
        FetchedWorkItem first = fetchAsRequired(p, lockTimeout(), owner("worker-A"), "the session item");
        long lockedAt = now();
        assertEquals(1, first.attemptCount());

        sleepUntilHalfLock(lockedAt);
        assertNothingFor(p, owner("worker-A"), "the work lease still holds half way through");

        sleepPastLockExpiry(lockedAt);
        assertNothingFor(p, owner("worker-B"), "the session is still owned by worker-A");
        FetchedWorkItem again = fetchExpected(p, owner("worker-A"), 1, "sticky-sess",
                "worker-A gets the redelivery through its session");
        assertEquals(2, again.attemptCount(), "the redelivery is a second attempt");
        assertNotEquals(first.lockToken(), again.lockToken());
        p.ackWorkItem(again.lockToken(), null);
    }

    /** A's session lease lapses while its work lease lives: B claims the session; after A abandons, B gets A's item. */
    @Test
    void test_session_lock_expires_new_owner_gets_redelivery() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "takeover2-sess"));
        FetchedWorkItem a = fetchAsRequired(p, WORK_LOCK, owner("worker-A", SHORT_SESSION_LEASE), "A's item");
        long claimedAt = now();
        p.enqueueForWorker(sessionActivity("inst-1", 2, "takeover2-sess"));
        assertNothingFor(p, owner("worker-B"), "worker-A's session lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 2, "takeover2-sess",
                "worker-B claims the lapsed session with the new item");
        p.ackWorkItem(b.lockToken(), null);

        p.abandonWorkItem(a.lockToken(), null, false);
        assertNothingFor(p, owner("worker-A"), "the abandoned item now follows worker-B's session");
        FetchedWorkItem redelivered = fetchExpected(p, owner("worker-B"), 1, "takeover2-sess",
                "the new owner gets the redelivery");
        assertEquals(2, redelivered.attemptCount(), "the redelivery is a second attempt");
        p.ackWorkItem(redelivered.lockToken(), null);
    }

    /** After its session lease lapsed, A's next fetch re-acquires the session with a fresh lease. */
    @Test
    void test_session_lock_expires_same_worker_reacquires() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        SessionFetchConfig a = owner("worker-A", SHORT_SESSION_LEASE);
        long claimedAt = claimAndRelease(p, a, "inst-1", 1, "reacq-sess");
        assertEquals(0, p.cleanupOrphanedSessions(NOT_IDLE), "the lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        p.enqueueForWorker(sessionActivity("inst-1", 2, "reacq-sess"));
        FetchedWorkItem f = fetchExpected(p, a, 2, "reacq-sess", "worker-A re-acquires its lapsed session");
        p.ackWorkItem(f.lockToken(), null);

        p.enqueueForWorker(sessionActivity("inst-1", 3, "reacq-sess"));
        assertNothingFor(p, owner("worker-B"), "the re-acquired lease is live again");
    }

    /** When both leases lapsed, B claims item and session (attempt 2) and A's stale token is useless. */
    @Test
    void test_both_locks_expire_different_worker_claims() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        Duration shortLock = Duration.ofMillis(200);
        p.enqueueForWorker(sessionActivity("inst-1", 1, "both-expire-sess"));
        FetchedWorkItem a = fetchAsRequired(p, shortLock, owner("worker-A", shortLock), "A's item");
        long lockedAt = now();
        assertNothingFor(p, owner("worker-B"), "both leases are still live");

        sleepUntil(lockedAt, shortLock.plus(EXPIRY_MARGIN));
        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 1, "both-expire-sess",
                "worker-B claims the item and the session");
        assertEquals(2, b.attemptCount(), "the redelivery is a second attempt");
        expectPermanentError("acking with worker-A's lapsed token",
                () -> p.ackWorkItem(a.lockToken(), activityCompleted("inst-1", 1, "late")));
        p.ackWorkItem(b.lockToken(), null);
    }

    /** A lapsed session lease does not invalidate a live work lease: the ack succeeds and removes the item. */
    @Test
    void test_session_lock_expires_activity_lock_valid_ack_succeeds() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(sessionActivity("inst-1", 1, "sess-expires"));
        FetchedWorkItem a = fetchAsRequired(p, LONG_LOCK, owner("worker-A", SHORT_SESSION_LEASE), "A's item");
        long claimedAt = now();
        p.enqueueForWorker(sessionActivity("inst-1", 2, "sess-expires"));
        assertNothingFor(p, owner("worker-B"), "the session lease is still live");

        sleepUntil(claimedAt, SHORT_SESSION_LEASE.plus(EXPIRY_MARGIN));
        FetchedWorkItem b = fetchExpected(p, owner("worker-B"), 2, "sess-expires",
                "the session lease lapsed: worker-B claims it");

        p.ackWorkItem(a.lockToken(), activityCompleted("inst-1", 1, "done"));
        assertNothingFor(p, owner("worker-B"), "A's acked item is gone, not redelivered");
        p.ackWorkItem(b.lockToken(), null);
    }

    /** Renewing a 1 s lease at 0.6 s keeps it owned past 1 s; it lapses a full lease after the last refresh. */
    @Test
    void test_session_lock_renewal_extends_past_original_timeout() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        Duration lease = Duration.ofSeconds(1);
        SessionFetchConfig a = owner("worker-A", lease);
        long claimedAt = claimAndRelease(p, a, "inst-1", 1, "renew-ext-sess");

        sleepUntil(claimedAt, lease.multipliedBy(6).dividedBy(10));
        assertEquals(1, renew(p, "worker-A", lease, NOT_IDLE), "the live session is renewed");

        sleepUntil(claimedAt, lease.plus(EXPIRY_MARGIN));
        p.enqueueForWorker(sessionActivity("inst-1", 2, "renew-ext-sess"));
        assertNothingFor(p, owner("worker-B"), "past the original lease the renewed session is still owned");
        FetchedWorkItem f = fetchExpected(p, a, 2, "renew-ext-sess", "the owner still gets the item");
        long refreshedAt = now();
        p.ackWorkItem(f.lockToken(), null);

        sleepUntil(refreshedAt, lease.plus(EXPIRY_MARGIN));
        p.enqueueForWorker(sessionActivity("inst-1", 3, "renew-ext-sess"));
        fetchExpected(p, owner("worker-B"), 3, "renew-ext-sess", "without further renewal the lease lapses");
    }
}
