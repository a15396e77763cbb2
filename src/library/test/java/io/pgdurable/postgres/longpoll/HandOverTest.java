package io.pgdurable.postgres.longpoll;

import static io.pgdurable.postgres.longpoll.LongPollHarness.LONG_LOCK;
import static io.pgdurable.postgres.longpoll.LongPollHarness.ORCH;
import static io.pgdurable.postgres.longpoll.LongPollHarness.VERSION;
import static io.pgdurable.postgres.longpoll.LongPollHarness.activity;
import static io.pgdurable.postgres.longpoll.LongPollHarness.open;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.internal.longpoll.Reservation;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Hand-over: worker items this provider writes go to its own parked fetches already leased, without a claim
 * (docs/long-polling.md, "Hand-over"). Every test checks the lease in the table, not only what the fetch returned.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HandOverTest {
    private static final Duration POLL = Duration.ofSeconds(10);
    private static final Duration GET = Duration.ofSeconds(10);

    @Test
    void a_parked_fetch_gets_an_enqueued_item_already_leased_to_it() throws Exception {
        try (LongPollHarness h = open("hoenq", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            int wakes = (int) h.signals.wakes();
            WorkItem.ActivityExecute item = activity("ho-1", 1);
            long before = System.currentTimeMillis();
            p.enqueueForWorker(item);
            long after = System.currentTimeMillis();
            FetchedWorkItem got = w.get(GET).orElseThrow();
            assertEquals(item, got.item());
            assertEquals(1, got.attemptCount());
            assertEquals(List.of(WakeSource.HANDOVER), h.signals.wakeSourcesSince(wakes));
            Lease lease = lease(h.schema, "ho-1");
            assertEquals(got.lockToken(), lease.token());
            assertEquals(1, lease.attempts());
            assertTrue(lease.untilMs() >= before + LONG_LOCK.toMillis()
                    && lease.untilMs() <= after + LONG_LOCK.toMillis(), "lease end " + lease.untilMs()
                    + " is the fetch's lock time from the enqueue [" + before + ", " + after + "]");
            p.ackWorkItem(got.lockToken(), null);
            assertNull(lease(h.schema, "ho-1"), "acked: the row is gone");
        }
    }

    @Test
    void the_activities_a_turn_schedules_go_to_parked_fetches_and_the_rest_is_claimed_once() throws Exception {
        try (LongPollHarness h = open("hoturn", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            h.startInstance("ho-turn");
            p.enqueueForOrchestrator(LongPollHarness.event("ho-turn", "go"), null);
            FetchedOrchestration turn = p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).orElseThrow();
            BackgroundFetch<FetchedWorkItem> a = h.parkWorker("worker-a", POLL);
            BackgroundFetch<FetchedWorkItem> b = h.parkWorker("worker-b", POLL);
            int wakes = (int) h.signals.wakes();
            List<WorkItem> scheduled = List.of(activity("ho-turn", 1), activity("ho-turn", 2),
                    activity("ho-turn", 3));
            p.ackOrchestrationItem(turn.lockToken(), turn.item().executionId(), List.of(), scheduled, List.of(),
                    ExecutionMetadata.of(ORCH, VERSION), List.of());
            Set<WorkItem> delivered = new HashSet<>();
            for (BackgroundFetch<FetchedWorkItem> w : List.of(a, b)) {
                FetchedWorkItem got = w.get(GET).orElseThrow();
                assertEquals(1, got.attemptCount());
                assertEquals(got.lockToken(), lease(h.schema, "ho-turn", ((WorkItem.ActivityExecute) got.item()).id())
                        .token());
                assertTrue(delivered.add(got.item()), "handed over twice: " + got.item());
            }
            assertEquals(List.of(WakeSource.HANDOVER, WakeSource.HANDOVER), h.signals.wakeSourcesSince(wakes));
            FetchedWorkItem third = p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
            assertTrue(delivered.add(third.item()), "claimed again: " + third.item());
            assertEquals(Set.copyOf(scheduled), delivered);
            assertTrue(p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()).isEmpty());
        }
    }

    @Test
    void an_activity_the_turn_also_cancels_is_not_handed_over_and_the_fetch_waits_on() throws Exception {
        try (LongPollHarness h = open("hocancel", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            h.startInstance("ho-cancel");
            p.enqueueForOrchestrator(LongPollHarness.event("ho-cancel", "go"), null);
            FetchedOrchestration turn = p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).orElseThrow();
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            p.ackOrchestrationItem(turn.lockToken(), turn.item().executionId(), List.of(),
                    List.of(activity("ho-cancel", 1)), List.of(), ExecutionMetadata.of(ORCH, VERSION),
                    List.of(new ScheduledActivityIdentifier("ho-cancel", 1, 1)));
            assertNull(lease(h.schema, "ho-cancel"), "scheduled and cancelled in one turn: absent");
            w.awaitParked(Duration.ofSeconds(5));
            assertFalse(w.isDone(), "the fetch still waits");
            WorkItem.ActivityExecute next = activity("ho-cancel-next", 1);
            p.enqueueForWorker(next);
            assertEquals(next, w.get(GET).orElseThrow().item());
        }
    }

    @Test
    void items_a_parked_fetch_cannot_take_are_written_unleased_and_claimed_as_before() throws Exception {
        try (LongPollHarness h = open("hofilter", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            BackgroundFetch<FetchedWorkItem> gpu = h.parkWorker("gpu", POLL, null, TagFilter.tags("gpu"));
            BackgroundFetch<FetchedWorkItem> sessions = h.parkWorker("sessions", POLL,
                    new SessionFetchConfig("owner-1", LONG_LOCK), TagFilter.any());
            // Untagged: the gpu fetch does not take it; the session-capable fetch takes wakes but never hand-overs.
            p.enqueueForWorker(activity("ho-plain", 1));
            FetchedWorkItem claimed = sessions.get(GET).orElseThrow();
            assertEquals("ho-plain", ((WorkItem.ActivityExecute) claimed.item()).instance());
            assertFalse(gpu.isDone(), "the gpu fetch is not woken for an untagged item");
            // A session item is never handed over, even to a fetch whose filter matches it.
            BackgroundFetch<FetchedWorkItem> any = h.parkWorker("any", POLL);
            int wakes = (int) h.signals.wakes();
            p.enqueueForWorker(activity("ho-session", 1, "s-1", null));
            Lease lease = lease(h.schema, "ho-session");
            assertNotNull(lease);
            assertNull(lease.token(), "a session item is written unleased");
            assertFalse(h.signals.wakeSourcesSince(wakes).contains(WakeSource.HANDOVER));
            // A tagged item goes to the gpu fetch.
            p.enqueueForWorker(activity("ho-gpu", 1, null, "gpu"));
            FetchedWorkItem tagged = gpu.get(GET).orElseThrow();
            assertEquals("ho-gpu", ((WorkItem.ActivityExecute) tagged.item()).instance());
            assertEquals(tagged.lockToken(), lease(h.schema, "ho-gpu").token());
            any.interrupt();
            assertTrue(any.get(GET).isEmpty(), "the untagged fetch had nothing to take");
        }
    }

    @Test
    void a_fetch_that_stops_waiting_before_the_hand_over_leaves_the_item_claimable_and_unattempted()
            throws Exception {
        Duration shortPoll = Duration.ofMillis(500);
        try (LongPollHarness h = open("hogone", b -> b.fallbackPollInterval(Duration.ofSeconds(30)));
             Connection locker = TestDatabase.connect()) {
            PostgresProvider p = h.provider;
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", shortPoll);
            locker.setAutoCommit(false);
            try (Statement st = locker.createStatement()) {
                // Holds back every insert into the queue: the enqueue reserves the fetch, then waits here.
                st.execute("LOCK TABLE \"" + h.schema + "\".worker_queue IN SHARE ROW EXCLUSIVE MODE");
            }
            CompletableFuture<Void> enqueue = CompletableFuture.runAsync(
                    () -> p.enqueueForWorker(activity("ho-gone", 1)));
            Waits.until(() -> waitingOnLock(h.schema), Duration.ofSeconds(5), () -> "the enqueue to wait on the lock");
            assertTrue(w.get(GET).isEmpty(), "the reserved fetch timed out empty");
            locker.rollback();
            enqueue.get(10, TimeUnit.SECONDS);
            Lease lease = lease(h.schema, "ho-gone");
            assertNotNull(lease, "the item is stored");
            assertNull(lease.token(), "released at once: leased to nobody");
            assertEquals(0, lease.attempts(), "the refused hand-over is not an attempt");
            FetchedWorkItem got = p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
            assertEquals(1, got.attemptCount());
        }
    }

    @Test
    void a_wake_arriving_while_the_fetch_is_reserved_is_kept_and_used_when_the_reservation_ends() throws Exception {
        try (LongPollHarness h = open("hoaside", b -> b.fallbackPollInterval(Duration.ofSeconds(30)));
             PostgresProvider other = PostgresProvider.create(TestDatabase.config(h.schema)
                     .migrationPolicy(MigrationPolicy.VERIFY_ONLY).longPolling(false).poolSize(2).build())) {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            Reservation r = h.poller().reserve(QueueKind.WORKER, takes -> true);
            assertNotNull(r, "a parked fetch that takes hand-overs can be reserved");
            assertNull(h.poller().reserve(QueueKind.WORKER, takes -> true), "one reservation per fetch");
            int notifications = h.signals.notificationCount();
            other.enqueueForWorker(activity("ho-aside", 1)); // another process: its wake comes by NOTIFY
            h.signals.await(() -> h.signals.notificationCount() > notifications, Duration.ofSeconds(5),
                    "the notification of the other provider's enqueue");
            assertFalse(w.isDone(), "reserved: the fetch does not claim for the wake yet");
            r.cancel();
            FetchedWorkItem got = w.get(GET).orElseThrow();
            assertEquals("ho-aside", ((WorkItem.ActivityExecute) got.item()).instance());
        }
    }

    // ------------------------------------------------------------------ orchestrator queue

    @Test
    void a_parked_orchestrator_fetch_gets_a_started_instance_already_claimed_for_it() throws Exception {
        try (LongPollHarness h = open("hoorch", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("orchestrator", POLL);
            int wakes = (int) h.signals.wakes();
            long before = System.currentTimeMillis();
            p.enqueueForOrchestrator(LongPollHarness.start("ho-orch"), null);
            long after = System.currentTimeMillis();
            FetchedOrchestration got = o.get(GET).orElseThrow();
            assertEquals("ho-orch", got.item().instance());
            assertEquals(ORCH, got.item().orchestrationName());
            assertEquals(1, got.attemptCount());
            assertEquals(List.of(LongPollHarness.start("ho-orch")), got.item().messages());
            assertEquals(List.of(WakeSource.HANDOVER), h.signals.wakeSourcesSince(wakes));
            InstanceLock lock = instanceLock(h.schema, "ho-orch");
            assertEquals(got.lockToken(), lock.token());
            assertTrue(lock.untilMs() >= before + LONG_LOCK.toMillis() && lock.untilMs() <= after + LONG_LOCK.toMillis(),
                    "lock end " + lock.untilMs() + " is the fetch's lock time from the enqueue [" + before + ", "
                            + after + "]");
            assertEquals(1, queuedMessages(h.schema, "ho-orch", got.lockToken()), "the message is tagged");
            h.ackTurn(got);
            assertNull(instanceLock(h.schema, "ho-orch"), "acked: unlocked");
            assertEquals(0, queuedMessages(h.schema, "ho-orch", null), "acked: the message is consumed");
            assertTrue(p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).isEmpty(), "claimed exactly once");
        }
    }

    @Test
    void an_activity_completion_hands_its_instance_to_a_parked_orchestrator_fetch() throws Exception {
        try (LongPollHarness h = open("hoorchack", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            h.startInstance("ho-ack");
            p.enqueueForOrchestrator(LongPollHarness.event("ho-ack", "go"), null);
            FetchedOrchestration turn = p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).orElseThrow();
            p.ackOrchestrationItem(turn.lockToken(), turn.item().executionId(), List.of(),
                    List.of(activity("ho-ack", 1)), List.of(), ExecutionMetadata.of(ORCH, VERSION), List.of());
            FetchedWorkItem work = p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("orchestrator", POLL);
            // A failed ack claims nothing and the fetch waits on.
            assertThrows(ProviderException.class, () -> p.ackWorkItem("no-such-token",
                    new WorkItem.ActivityCompleted("ho-ack", 1, 1, "\"r\"")));
            assertNull(instanceLock(h.schema, "ho-ack"));
            o.awaitParked(Duration.ofSeconds(5));
            int wakes = (int) h.signals.wakes();
            WorkItem.ActivityCompleted done = new WorkItem.ActivityCompleted("ho-ack", 1, 1, "\"r\"");
            p.ackWorkItem(work.lockToken(), done);
            FetchedOrchestration next = o.get(GET).orElseThrow();
            assertEquals(List.of(done), next.item().messages());
            assertEquals(1, next.attemptCount());
            assertEquals(List.of(WakeSource.HANDOVER), h.signals.wakeSourcesSince(wakes));
            assertEquals(next.lockToken(), instanceLock(h.schema, "ho-ack").token());
            assertNull(lease(h.schema, "ho-ack"), "the activity is acked");
            h.ackTurn(next);
            assertTrue(p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).isEmpty(), "claimed exactly once");
        }
    }

    @Test
    void a_message_for_an_instance_in_its_turn_is_not_handed_over_and_is_claimed_after_the_turn() throws Exception {
        try (LongPollHarness h = open("hoorchbusy", b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            h.startInstance("ho-busy");
            p.enqueueForOrchestrator(LongPollHarness.event("ho-busy", "first"), null);
            FetchedOrchestration turn = p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).orElseThrow();
            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("orchestrator", POLL);
            int wakes = (int) h.signals.wakes();
            p.enqueueForOrchestrator(LongPollHarness.event("ho-busy", "second"), null);
            assertEquals(turn.lockToken(), instanceLock(h.schema, "ho-busy").token(), "the turn keeps its lock");
            assertEquals(2, queuedMessages(h.schema, "ho-busy", null), "the new message is stored");
            assertEquals(1, queuedMessages(h.schema, "ho-busy", turn.lockToken()), "and not tagged for the turn");
            o.awaitParked(Duration.ofSeconds(5));
            assertFalse(o.isDone(), "nothing to hand over while the turn holds the instance");
            h.ackTurn(turn);
            FetchedOrchestration next = o.get(GET).orElseThrow();
            assertEquals(List.of(LongPollHarness.event("ho-busy", "second")), next.item().messages());
            assertEquals(1, next.attemptCount());
            assertFalse(h.signals.wakeSourcesSince(wakes).contains(WakeSource.HANDOVER));
        }
    }

    @Test
    void an_orchestrator_fetch_that_stops_waiting_before_the_hand_over_leaves_the_instance_claimable()
            throws Exception {
        Duration shortPoll = Duration.ofMillis(500);
        try (LongPollHarness h = open("hoorchgone", b -> b.fallbackPollInterval(Duration.ofSeconds(30)));
             Connection locker = TestDatabase.connect()) {
            PostgresProvider p = h.provider;
            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("orchestrator", shortPoll);
            locker.setAutoCommit(false);
            try (Statement st = locker.createStatement()) {
                st.execute("LOCK TABLE \"" + h.schema + "\".orchestrator_queue IN SHARE ROW EXCLUSIVE MODE");
            }
            CompletableFuture<Void> enqueue = CompletableFuture.runAsync(
                    () -> p.enqueueForOrchestrator(LongPollHarness.start("ho-orch-gone"), null));
            Waits.until(() -> waitingOnLock(h.schema, "enqueue_orchestrator_item_claiming"), Duration.ofSeconds(5),
                    () -> "the enqueue to wait on the lock");
            assertTrue(o.get(GET).isEmpty(), "the reserved fetch timed out empty");
            locker.rollback();
            enqueue.get(10, TimeUnit.SECONDS);
            assertNull(instanceLock(h.schema, "ho-orch-gone"), "released at once");
            assertEquals(1, queuedMessages(h.schema, "ho-orch-gone", null), "the message is stored");
            FetchedOrchestration got = p.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null).orElseThrow();
            assertEquals("ho-orch-gone", got.item().instance());
            assertEquals(1, got.attemptCount(), "the refused hand-over is not an attempt");
        }
    }

    @Test
    void a_delayed_orchestrator_message_is_never_handed_over() throws Exception {
        try (LongPollHarness h = open("hoorchlater")) {
            PostgresProvider p = h.provider;
            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("orchestrator", POLL);
            int wakes = (int) h.signals.wakes();
            long before = System.currentTimeMillis();
            p.enqueueForOrchestrator(LongPollHarness.start("ho-later"), Duration.ofMillis(300));
            assertNull(instanceLock(h.schema, "ho-later"), "not claimed at the write");
            FetchedOrchestration got = o.get(GET).orElseThrow();
            assertTrue(System.currentTimeMillis() - before >= 300, "not before its visibility");
            assertEquals("ho-later", got.item().instance());
            assertFalse(h.signals.wakeSourcesSince(wakes).contains(WakeSource.HANDOVER));
        }
    }

    // ------------------------------------------------------------------ the table's view

    record Lease(String token, Long untilMs, int attempts) {}

    /** The worker row of {@code instance} (activity 1), or null when there is none. */
    static Lease lease(String schema, String instance) throws SQLException {
        return lease(schema, instance, 1);
    }

    private static Lease lease(String schema, String instance, long activity) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT lock_token, locked_until_ms, attempt_count FROM \""
                     + schema + "\".worker_queue WHERE instance_id = ? AND activity_id = ?")) {
            ps.setString(1, instance);
            ps.setLong(2, activity);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                long until = rs.getLong(2);
                Lease l = new Lease(rs.getString(1), rs.wasNull() ? null : until, rs.getInt(3));
                assertFalse(rs.next(), "one row per activity");
                return l;
            }
        }
    }

    private record InstanceLock(String token, long untilMs) {}

    private static InstanceLock instanceLock(String schema, String instance) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT lock_token, locked_until_ms FROM \"" + schema
                     + "\".instance_locks WHERE instance_id = ? AND locked_until_ms > ?")) {
            ps.setString(1, instance);
            ps.setLong(2, System.currentTimeMillis());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new InstanceLock(rs.getString(1), rs.getLong(2)) : null;
            }
        }
    }

    /** Queued messages of {@code instance} tagged with {@code token}; with null, all of them. */
    private static int queuedMessages(String schema, String instance, String token) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM \"" + schema
                     + "\".orchestrator_queue WHERE instance_id = ? AND (?::TEXT IS NULL OR lock_token = ?)")) {
            ps.setString(1, instance);
            ps.setString(2, token);
            ps.setString(3, token);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static boolean waitingOnLock(String schema) {
        return waitingOnLock(schema, "enqueue_worker_item_leased");
    }

    private static boolean waitingOnLock(String schema, String function) {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_stat_activity "
                     + "WHERE wait_event_type = 'Lock' AND query LIKE ?")) {
            ps.setString(1, "%" + schema + "%" + function + "%");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
