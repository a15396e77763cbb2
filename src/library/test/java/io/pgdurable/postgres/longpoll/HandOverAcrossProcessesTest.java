package io.pgdurable.postgres.longpoll;

import static io.pgdurable.postgres.longpoll.HandOverTest.lease;
import static io.pgdurable.postgres.longpoll.LongPollHarness.LONG_LOCK;
import static io.pgdurable.postgres.longpoll.LongPollHarness.activity;
import static io.pgdurable.postgres.longpoll.LongPollHarness.open;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.longpoll.WakeSource;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.ProviderInternals;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Hand-over across processes (docs/long-polling.md "Hand-over across processes"): an item another
 * provider enqueues reaches a parked fetch of this one already leased, inside the NOTIFY, without a claim. Each test
 * checks the row of parked takers and the item's lease in the tables, not only what the fetch returned.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HandOverAcrossProcessesTest {
    private static final Duration POLL = Duration.ofSeconds(10);
    private static final Duration GET = Duration.ofSeconds(10);
    private static final Duration SETTLED = Duration.ofSeconds(5);

    @Test
    void an_item_enqueued_by_another_provider_reaches_the_parked_fetch_already_leased() throws Exception {
        try (LongPollHarness h = open("hoxenq", b -> b.handOverAcrossProcesses(true)
                .fallbackPollInterval(Duration.ofSeconds(30)));
             PostgresProvider other = enqueuer(h, true)) {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
            Taker row = taker(h.schema);
            assertEquals(1, row.waiting());
            assertEquals(LONG_LOCK.toMillis(), row.lockMs());
            assertTrue(heldByAnother(row.livenessKey()), "the listener's session holds the liveness key");
            int wakes = (int) h.signals.wakes();
            WorkItem.ActivityExecute item = activity("hox-1", 1);
            long before = System.currentTimeMillis();
            other.enqueueForWorker(item);
            long after = System.currentTimeMillis();
            FetchedWorkItem got = w.get(GET).orElseThrow();
            assertEquals(item, got.item());
            assertEquals(1, got.attemptCount());
            // The listener's thread signals after handing the item over, so the fetch can return first.
            h.signals.await(() -> h.signals.handOffsTaken() == 1 && !h.signals.wakeSourcesSince(wakes).isEmpty(),
                    SETTLED, "the hand-over signalled");
            assertEquals(List.of(WakeSource.HANDOVER), h.signals.wakeSourcesSince(wakes));
            assertEquals(1, h.signals.handOffsTaken());
            h.signals.await(() -> h.signals.handOffsHeld() == 1, SETTLED, "the item held for the fetch's lock time");
            HandOverTest.Lease lease = lease(h.schema, "hox-1");
            assertEquals(got.lockToken(), lease.token());
            assertEquals(1, lease.attempts());
            assertTrue(lease.untilMs() >= before + LONG_LOCK.toMillis()
                    && lease.untilMs() <= after + LONG_LOCK.toMillis(), "lease end " + lease.untilMs()
                    + " is the parked fetch's lock time from the enqueue [" + before + ", " + after + "]");
            assertEquals(0, taker(h.schema).waiting(), "the enqueue took its taker off the row");
            assertTrue(h.provider.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()).isEmpty(),
                    "leased: nobody else claims it");
            h.provider.ackWorkItem(got.lockToken(), null);
            assertNull(lease(h.schema, "hox-1"), "acked: the row is gone");
        }
    }

    @Test
    void an_item_handed_to_a_process_that_never_hears_it_is_claimable_after_the_offered_lease() throws Exception {
        try (LongPollHarness h = open("hoxdeaf", b -> b.handOverAcrossProcesses(true));
             PostgresProvider other = enqueuer(h, true);
             Connection deaf = TestDatabase.connect()) {
            // A process whose listener session still holds its key but reads nothing: the item offered to it is the
            // one whose notification a listener dying in that instant would lose.
            try (PreparedStatement ps = deaf.prepareStatement("SELECT pg_advisory_lock(4343)")) {
                ps.execute();
            }
            execute(h.schema, "INSERT INTO %s.parked_fetches VALUES ('deaf', 4343, 1, " + LONG_LOCK.toMillis()
                    + ", 0)");
            long before = System.currentTimeMillis();
            other.enqueueForWorker(activity("hox-deaf", 1));
            long after = System.currentTimeMillis();
            assertEquals(0L, count(h.schema, "SELECT waiting FROM %s.parked_fetches WHERE origin = 'deaf'"),
                    "offered to the deaf process");
            long offered = HandOverTest.lease(h.schema, "hox-deaf").untilMs();
            long shortLease = ProviderInternals.offeredLeaseMillis();
            assertTrue(offered >= before + shortLease && offered <= after + shortLease,
                    "leased for the offered lease from the enqueue, not the taker's lock time: " + offered);
            assertTrue(h.provider.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()).isEmpty(),
                    "leased: not claimable at once");
            FetchedWorkItem got = h.provider.fetchWorkItem(LONG_LOCK, Duration.ofSeconds(20), null, TagFilter.any())
                    .orElseThrow();
            long at = System.currentTimeMillis();
            assertEquals("hox-deaf", ((WorkItem.ActivityExecute) got.item()).instance());
            assertTrue(at >= offered, "not before the offered lease ended: " + (at - offered) + " ms");
            assertTrue(at <= offered + 3_000, "soon after the offered lease ended, not after the lock time: "
                    + (at - offered) + " ms");
            assertEquals(0, h.signals.handOffsHeld(), "nobody held it");
            h.provider.ackWorkItem(got.lockToken(), null);
        }
    }

    @Test
    void a_rise_of_the_parked_takers_is_written_at_once_and_a_fall_once_it_rested() throws Exception {
        try (LongPollHarness h = open("hoxfall", b -> b.handOverAcrossProcesses(true))) {
            long parked = System.nanoTime();
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", Duration.ofMillis(400));
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
            long risen = System.nanoTime();
            assertTrue(w.get(GET).isEmpty(), "timed out");
            long ended = System.nanoTime();
            h.signals.await(() -> h.signals.lastTakersRegistered() == 0, SETTLED, "no parked taker written");
            long fallen = System.nanoTime();
            long settle = ProviderInternals.takersFallSettleMillis();
            assertTrue(TimeUnit.NANOSECONDS.toMillis(risen - parked) < settle,
                    "the rise was written before a fall would be: " + TimeUnit.NANOSECONDS.toMillis(risen - parked)
                            + " ms");
            long fallMs = TimeUnit.NANOSECONDS.toMillis(fallen - ended);
            assertTrue(fallMs >= settle - 50 && fallMs <= settle + 3_000,
                    "the fall was written once it had rested " + settle + " ms: after " + fallMs + " ms");
            assertEquals(List.of(1, 0), h.signals.takersRegistered(), "one write each way");
        }
    }

    @Test
    void a_taker_that_stopped_waiting_gives_the_item_back_with_its_attempt_uncounted() throws Exception {
        try (LongPollHarness h = open("hoxback", b -> b.handOverAcrossProcesses(true));
             PostgresProvider other = enqueuer(h, true)) {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", Duration.ofMillis(300));
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
            assertTrue(w.get(GET).isEmpty(), "timed out");
            h.signals.await(() -> h.signals.lastTakersRegistered() == 0, SETTLED, "no parked taker written");
            // The row says one more than there is, as after a fetch that ended in the instant before a write: it
            // still names that fetch's lock time (a row without takers names 1 ms, which would let the immediate
            // claim below reclaim the offered lease before it is given back).
            setWaiting(h.schema, 1, LONG_LOCK.toMillis());
            other.enqueueForWorker(activity("hox-back", 1));
            h.signals.await(() -> h.signals.handOffsGivenBack() == 1, SETTLED, "the item given back");
            FetchedWorkItem claimed = h.provider.fetchWorkItem(LONG_LOCK, GET, null, TagFilter.any()).orElseThrow();
            assertEquals("hox-back", ((WorkItem.ActivityExecute) claimed.item()).instance());
            assertEquals(1, claimed.attemptCount(), "the refused hand-over did not count as an attempt");
            assertEquals(0, h.signals.handOffsTaken());
        }
    }

    @Test
    void a_taker_whose_listener_is_gone_is_skipped_and_removed() throws Exception {
        try (LongPollHarness h = open("hoxdead", b -> b.handOverAcrossProcesses(true));
             PostgresProvider other = enqueuer(h, true)) {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
            // A process that died: its row is older, so it is offered first; nobody holds its key.
            execute(h.schema, "INSERT INTO %s.parked_fetches VALUES ('dead', 4242, 3, 1000, 0)");
            other.enqueueForWorker(activity("hox-dead", 1));
            FetchedWorkItem got = w.get(GET).orElseThrow();
            assertEquals("hox-dead", ((WorkItem.ActivityExecute) got.item()).instance());
            assertEquals(got.lockToken(), lease(h.schema, "hox-dead").token());
            h.signals.await(() -> h.signals.handOffsTaken() > 0, SETTLED, "the hand-over signalled");
            assertEquals(1, h.signals.handOffsTaken());
            assertEquals(0L, count(h.schema, "SELECT count(*) FROM %s.parked_fetches WHERE origin = 'dead'"),
                    "the dead taker's row is removed");
        }
    }

    @Test
    void after_the_listener_reconnects_the_new_liveness_key_is_written_and_hand_over_resumes() throws Exception {
        try (LongPollHarness h = open("hoxreconn", b -> b.handOverAcrossProcesses(true));
             PostgresProvider other = enqueuer(h, true)) {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
            long oldKey = taker(h.schema).livenessKey();
            int registrations = h.signals.takersRegistered().size();
            terminateHolderOf(oldKey);
            h.signals.await(() -> h.signals.reconnects() >= 1, Duration.ofSeconds(15), "the listener reconnected");
            h.signals.await(() -> h.signals.takersRegistered().size() > registrations
                    && h.signals.lastTakersRegistered() == 1, SETTLED, "the taker written again");
            long newKey = taker(h.schema).livenessKey();
            assertNotEquals(oldKey, newKey);
            assertFalse(heldByAnother(oldKey), "the old session's key is free");
            assertTrue(heldByAnother(newKey), "the new session holds its key");
            int wakes = (int) h.signals.wakes();
            other.enqueueForWorker(activity("hox-reconn", 1));
            FetchedWorkItem got = w.get(GET).orElseThrow();
            assertEquals("hox-reconn", ((WorkItem.ActivityExecute) got.item()).instance());
            // A wake is recorded before its fetch is released (WakeRecordedBeforeReleaseTest): no wait needed.
            assertTrue(h.signals.wakeSourcesSince(wakes).contains(WakeSource.HANDOVER), "a hand-over wake");
        }
    }

    @Test
    void session_tagged_and_oversized_items_are_announced_and_claimed_as_before() throws Exception {
        try (LongPollHarness h = open("hoxplain", b -> b.handOverAcrossProcesses(true)
                .fallbackPollInterval(NO_PROBE_RACE));
             PostgresProvider other = enqueuer(h, true)) {
            // A fetch with a session configuration takes no hand-over, so nothing is written for it.
            WorkItem.ActivityExecute session = activity("hox-session", 1, "s-1", null);
            BackgroundFetch<FetchedWorkItem> s = h.parkWorker("sessions", POLL,
                    new SessionFetchConfig("owner", LONG_LOCK), TagFilter.any());
            int wakes = (int) h.signals.wakes();
            other.enqueueForWorker(session);
            claimedAfterNotification(h, s, session, wakes);
            assertEquals(List.of(), h.signals.takersRegistered());
            String big = "\"" + "x".repeat(8_000) + "\"";
            for (WorkItem.ActivityExecute item : List.of(activity("hox-tag", 1, null, "gpu"),
                    new WorkItem.ActivityExecute("hox-big", 1, 1, "LpActivity", big))) {
                BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker-" + item.instance(), POLL);
                h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
                wakes = (int) h.signals.wakes();
                other.enqueueForWorker(item);
                claimedAfterNotification(h, w, item, wakes);
                h.signals.await(() -> h.signals.lastTakersRegistered() == 0, SETTLED, "no parked taker written");
            }
            assertEquals(0, h.signals.handOffsTaken() + h.signals.handOffsGivenBack());
        }
    }

    /**
     * The tests that assert a notification woke the fetch keep the one-second fallback probe out of the way: on a
     * loaded machine the probe came first once and claimed the item (CI, 2026-12-04).
     */
    private static final Duration NO_PROBE_RACE = Duration.ofSeconds(30);

    private static void claimedAfterNotification(LongPollHarness h, BackgroundFetch<FetchedWorkItem> w,
                                                 WorkItem.ActivityExecute item, int wakes) throws Exception {
        FetchedWorkItem got = w.get(GET).orElseThrow();
        assertEquals(item, got.item());
        assertEquals(WakeSource.NOTIFICATION, h.signals.wakeSourcesSince(wakes).get(0), item.instance());
        assertEquals(got.lockToken(), lease(h.schema, item.instance()).token());
        h.provider.ackWorkItem(got.lockToken(), null);
    }

    @Test
    void without_the_option_nothing_is_written_and_no_liveness_lock_is_held() throws Exception {
        try (LongPollHarness h = open("hoxoff", b -> b.handOverAcrossProcesses(false)
                .fallbackPollInterval(NO_PROBE_RACE));
             PostgresProvider other = enqueuer(h, false)) {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            int wakes = (int) h.signals.wakes();
            other.enqueueForWorker(activity("hox-off", 1));
            FetchedWorkItem got = w.get(GET).orElseThrow();
            assertEquals(WakeSource.NOTIFICATION, h.signals.wakeSourcesSince(wakes).get(0));
            assertEquals(List.of(), h.signals.takersRegistered());
            assertEquals(0L, count(h.schema, "SELECT count(*) FROM %s.parked_fetches"));
            assertEquals(0L, h.poller().livenessKey(), "the listener holds no liveness lock");
            h.provider.ackWorkItem(got.lockToken(), null);
        }
    }

    @Test
    void closing_removes_the_row() throws Exception {
        LongPollHarness h = open("hoxclose", b -> b.handOverAcrossProcesses(true));
        String schema = h.schema;
        try {
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL);
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, SETTLED, "one parked taker written");
            h.provider.close();
            assertTrue(w.get(GET).isEmpty(), "the parked fetch returns empty on close");
            assertEquals(0L, count(schema, "SELECT count(*) FROM %s.parked_fetches"));
        } finally {
            h.close();
        }
    }

    // ------------------------------------------------------------------ helpers

    /** A provider on the harness's schema without long polling, as a client in another process. */
    private static PostgresProvider enqueuer(LongPollHarness h, boolean across) {
        return PostgresProvider.create(h.provider.config().toBuilder().longPolling(false)
                .handOverAcrossProcesses(across).migrationPolicy(MigrationPolicy.VERIFY_ONLY).poolSize(2).build());
    }

    private record Taker(long livenessKey, int waiting, long lockMs) {}

    private static Taker taker(String schema) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT liveness_key, waiting, lock_ms FROM \"" + schema
                     + "\".parked_fetches");
             ResultSet rs = ps.executeQuery()) {
            assertTrue(rs.next(), "a row of parked takers");
            Taker t = new Taker(rs.getLong(1), rs.getInt(2), rs.getLong(3));
            assertFalse(rs.next(), "one row: one listening provider");
            return t;
        }
    }

    private static void setWaiting(String schema, int waiting, long lockMs) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("UPDATE \"" + schema
                     + "\".parked_fetches SET waiting = ?, lock_ms = ?")) {
            ps.setInt(1, waiting);
            ps.setLong(2, lockMs);
            assertEquals(1, ps.executeUpdate());
        }
    }

    /** Whether another session holds the advisory lock {@code key}: this one cannot take it, even shared. */
    private static boolean heldByAnother(long key) throws SQLException {
        try (Connection c = TestDatabase.connect()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_xact_lock_shared(?)")) {
                ps.setLong(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return !rs.getBoolean(1);
                }
            } finally {
                c.rollback();
            }
        }
    }

    private static void terminateHolderOf(long key) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(pid) FROM pg_locks "
                     + "WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' "
                     + "AND ((classid::bigint << 32) | objid::bigint) = ?")) {
            ps.setLong(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next() && rs.getBoolean(1), "terminated the listener's backend");
            }
        }
    }

    private static void execute(String schema, String sql) throws SQLException {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(
                String.format(sql, "\"" + schema + "\""))) {
            ps.execute();
        }
    }

    private static long count(String schema, String sql) throws SQLException {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(
                String.format(sql, "\"" + schema + "\""));
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
