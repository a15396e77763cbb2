package io.pgdurable.postgres.longpoll;

import static io.pgdurable.postgres.longpoll.LongPollHarness.LONG_LOCK;
import static io.pgdurable.postgres.longpoll.LongPollHarness.activity;
import static io.pgdurable.postgres.longpoll.LongPollHarness.event;
import static io.pgdurable.postgres.longpoll.LongPollHarness.start;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.CapacityExceededException;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Long polling when things go wrong or end: capacity limits, cancelled fetches, activation rules, close(), and
 * timer scans that run into an exclusive lock.
 *
 * <p>Isolated: close() and scan timeouts are asserted in milliseconds and threads are counted.
 */
@Isolated("timing: close and scan timeouts are asserted in milliseconds")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LongPollFailureTest {
    private static final Duration POLL = Duration.ofSeconds(10);
    private static final Duration GET = Duration.ofSeconds(15);

    // ------------------------------------------------------------------ 8. capacity

    @Test
    void beyond_max_parked_waiters_a_fetch_fails_with_a_retryable_capacity_error() {
        try (LongPollHarness h = LongPollHarness.open("lpcapacity", b -> b.maxParkedWaiters(2))) {
            PostgresProvider p = h.provider;
            h.warmUp();
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("first", POLL);
            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("second", POLL);
            assertEquals(2, h.poller().waiting());

            long t0 = System.nanoTime();
            CapacityExceededException e = assertThrows(CapacityExceededException.class,
                    () -> p.fetchWorkItem(LONG_LOCK, POLL, null, TagFilter.any()));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < 100, "the refusal took " + ms + " ms; it must not wait");
            assertTrue(e.retryable(), "capacity exceeded is retryable");
            assertTrue(e.sqlState().isEmpty(), "not a database error: " + e.sqlState());
            assertFalse(e.getCause() instanceof SQLException, "not a database error: " + e.getCause());
            assertEquals("fetchWorkItem", e.operation());
            assertTrue(e.getMessage().contains("maxParkedWaiters"), e.getMessage());
            ProviderException asProvider = assertThrows(ProviderException.class,
                    () -> p.fetchOrchestrationItem(LONG_LOCK, POLL, null));
            assertTrue(asProvider instanceof CapacityExceededException, "the orchestrator queue shares the limit");
            // a fetch that does not wait is not a parked waiter
            assertEquals(Optional.empty(), p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any()));
            assertEquals(2, h.poller().waiting(), "refused fetches left no registration");

            // the two parked fetches still work
            WorkItem.ActivityExecute item = activity("capacity", 1);
            long t1 = System.nanoTime();
            p.enqueueForWorker(item);
            p.enqueueForOrchestrator(start("capacity"), null);
            FetchedWorkItem got = w.get(GET).orElseThrow(() -> new AssertionError("first parked fetch: empty"));
            FetchedOrchestration turn = o.get(GET).orElseThrow(() -> new AssertionError("second parked fetch: empty"));
            assertEquals(item, got.item());
            assertEquals("capacity", turn.item().instance());
            assertTrue(w.millisSince(t1) < 500 && o.millisSince(t1) < 500,
                    "parked fetches returned after " + w.millisSince(t1) + " / " + o.millisSince(t1) + " ms");
            p.ackWorkItem(got.lockToken(), null);
            h.ackTurn(turn);
            assertEquals(0, h.poller().waiting());
            // capacity is free again
            BackgroundFetch<FetchedWorkItem> again = h.parkWorker("again", POLL);
            p.enqueueForWorker(activity("capacity", 2));
            FetchedWorkItem second = again.get(GET).orElseThrow(() -> new AssertionError("no room after release"));
            p.ackWorkItem(second.lockToken(), null);
        }
    }

    // ------------------------------------------------------------------ 9. cancellation

    @Test
    void interrupting_a_parked_fetch_returns_empty_promptly_and_leaves_no_registration() {
        try (LongPollHarness h = LongPollHarness.open("lpcancel")) {
            PostgresProvider p = h.provider;
            h.warmUp();
            for (int i = 0; i < 3; i++) {
                BackgroundFetch<FetchedWorkItem> w = h.parkWorker("cancel-worker", POLL);
                BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("cancel-orchestrator", POLL);
                assertEquals(2, h.poller().waiting());
                long t0 = System.nanoTime();
                w.interrupt();
                o.interrupt();
                assertEquals(Optional.empty(), w.get(GET));
                assertEquals(Optional.empty(), o.get(GET));
                long ms = Math.max(w.millisSince(t0), o.millisSince(t0));
                assertTrue(ms < 200, "interrupted fetches returned after " + ms + " ms");
                assertTrue(w.interruptedAfter() && o.interruptedAfter(), "the interrupt flag is kept");
                assertEquals(0, h.poller().waiting(), "no leaked registration");
            }
            // wakes that find no one (the cancelled waiters are gone) are no-ops: the machinery still works
            long lost = h.signals.connectionsLost();
            p.enqueueForWorker(activity("after-cancel", 1));
            p.enqueueForOrchestrator(start("after-cancel"), null);
            BackgroundFetch<FetchedWorkItem> w = BackgroundFetch.start("after",
                    () -> p.fetchWorkItem(LONG_LOCK, POLL, null, TagFilter.any()));
            p.ackWorkItem(w.get(GET).orElseThrow().lockToken(), null);
            h.ackTurn(p.fetchOrchestrationItem(LONG_LOCK, POLL, null).orElseThrow());
            assertEquals(lost, h.signals.connectionsLost());
            assertTrue(h.poller().isListening());
        }
    }

    /**
     * Cancellation racing a wake: whichever way it goes, the item reaches a fetch promptly. A wake that lands on a
     * fetch being cancelled (parked, claiming, or pausing after an unsuccessful wake) is handed on, never thrown
     * and never lost.
     */
    @Test
    void a_wake_that_reaches_a_cancelled_fetch_is_handed_on() {
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        try (LongPollHarness h = LongPollHarness.open("lpcancelrace",
                b -> b.fallbackPollInterval(Duration.ofSeconds(30)));
             LongPollHarness elsewhere = LongPollHarness.onSchema(h.schema,
                     b -> b.fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            h.warmUp();
            int aGot = 0;
            for (int r = 0; r < 30; r++) {
                String ctx = "seed " + seed + " round " + r;
                BackgroundFetch<FetchedWorkItem> a = h.parkWorker("a", POLL);
                BackgroundFetch<FetchedWorkItem> b = h.parkWorker("b", POLL);
                WorkItem.ActivityExecute item = activity("race", r);
                long jitter = TimeUnit.MICROSECONDS.toNanos(rnd.nextInt(2_000));
                long t0 = System.nanoTime();
                if (rnd.nextBoolean()) {
                    a.interrupt();
                    LockSupport.parkNanos(jitter);
                    p.enqueueForWorker(item);
                } else {
                    p.enqueueForWorker(item);
                    LockSupport.parkNanos(jitter);
                    a.interrupt();
                }
                Optional<FetchedWorkItem> fromA = a.get(GET);
                BackgroundFetch<FetchedWorkItem> winner;
                if (fromA.isPresent()) {
                    aGot++;
                    winner = a;
                    assertEquals(item, fromA.get().item(), ctx);
                    assertFalse(b.isDone(), ctx + ": b returned too: " + b.describe());
                    b.interrupt();
                    assertEquals(Optional.empty(), b.get(GET), ctx);
                    p.ackWorkItem(fromA.get().lockToken(), null);
                } else {
                    assertTrue(a.interruptedAfter(), ctx + ": an empty return from a means it was cancelled");
                    winner = b;
                    FetchedWorkItem got = b.get(GET).orElseThrow(() -> new AssertionError(ctx + ": item lost"));
                    assertEquals(item, got.item(), ctx);
                    p.ackWorkItem(got.lockToken(), null);
                }
                long ms = winner.millisSince(t0);
                assertTrue(ms < 500, ctx + ": the item reached a fetch after " + ms + " ms (fallback 30 s)");
                assertEquals(0, h.poller().waiting(), ctx + ": no leaked registration");
            }

            // The cancelled fetch holds a wake while pausing after an unsuccessful one (coalescing). The instance is
            // held by another provider (process): this one cannot know it is locked, so its messages wake here.
            h.startInstance("locked");
            p.enqueueForOrchestrator(event("locked", "m1"), null);
            FetchedOrchestration held = elsewhere.provider.fetchOrchestrationItem(LONG_LOCK, Duration.ZERO, null)
                    .orElseThrow();
            for (int r = 0; r < 5; r++) {
                String ctx = "seed " + seed + " coalescing round " + r;
                BackgroundFetch<FetchedOrchestration> a = h.parkOrchestrator("a", POLL);
                BackgroundFetch<FetchedOrchestration> b = h.parkOrchestrator("b", POLL);
                for (int k = 0; k < 2; k++) { // two useless wakes: a (and b, passed on) now pause between retries
                    long wakes = h.signals.wakes();
                    p.enqueueForOrchestrator(event("locked", "n" + r + "-" + k), null); // the instance is locked
                    h.signals.await(() -> h.signals.wakes() > wakes, Duration.ofSeconds(5), ctx + ": wake");
                    Waits.until(() -> a.parked() || a.isDone(), Duration.ofSeconds(5), () -> ctx + ": a parks again");
                }
                long t0 = System.nanoTime();
                p.enqueueForOrchestrator(start("fresh-" + r), null); // a takes this wake, then pauses ...
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(rnd.nextInt(3_000)));
                a.interrupt(); // ... and is cancelled during the pause
                Optional<FetchedOrchestration> fromA = a.get(GET);
                FetchedOrchestration got;
                BackgroundFetch<FetchedOrchestration> winner;
                if (fromA.isPresent()) {
                    got = fromA.get();
                    winner = a;
                    b.interrupt();
                    assertEquals(Optional.empty(), b.get(GET), ctx);
                } else {
                    winner = b;
                    got = b.get(GET).orElseThrow(() -> new AssertionError(ctx + ": the fresh instance was lost"));
                }
                assertEquals("fresh-" + r, got.item().instance(), ctx);
                long ms = winner.millisSince(t0);
                assertTrue(ms < 500, ctx + ": fresh instance reached a fetch after " + ms + " ms (fallback 30 s)");
                h.ackTurn(got);
                assertEquals(0, h.poller().waiting(), ctx);
            }
            elsewhere.ackTurn(held);
            System.out.println("[lp] cancel race: seed " + seed + ", cancelled fetch won " + aGot + "/30");
        }
    }

    // ------------------------------------------------------------------ 12. activation

    @Test
    void activation_rules_and_configuration_checks() throws SQLException {
        String schema = TestDatabase.newSchemaName("lpactivate");
        try {
            // a plain APPLY_ALL provider leaves the schema unactivated
            try (PostgresProvider plain = PostgresProvider.create(TestDatabase.config(schema).build())) {
                assertFalse(migrator(schema).activated(), "installed disabled");
            }
            // VERIFY_ONLY + long polling refuses a schema that was never activated, and changes nothing
            String before = fingerprint(schema);
            ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                    TestDatabase.config(schema).migrationPolicy(MigrationPolicy.VERIFY_ONLY).longPolling(true)
                            .build()).close());
            assertFalse(e.retryable(), "a never-activated schema is a permanent error");
            assertTrue(e.getMessage().toLowerCase(Locale.ROOT).contains("activat"), e.getMessage());
            assertTrue(e.getMessage().contains(schema), e.getMessage());
            assertEquals(before, fingerprint(schema), "VERIFY_ONLY ran DDL");
            assertFalse(migrator(schema).activated());
            assertTrue(liveThreads(NotifyChannel.forSchema(schema)).isEmpty(), "a refused provider left threads");

            // APPLY_ALL + long polling activates the schema
            try (PostgresProvider activating = PostgresProvider.create(TestDatabase.config(schema).longPolling(true)
                    .build())) {
                assertTrue(migrator(schema).activated(), "APPLY_ALL with long polling activates");
            }
            // afterwards VERIFY_ONLY + long polling starts, runs no DDL, and long-polls
            String activated = fingerprint(schema);
            try (LongPollHarness h = LongPollHarness.onSchema(schema,
                    b -> b.migrationPolicy(MigrationPolicy.VERIFY_ONLY))) {
                assertEquals(activated, fingerprint(schema), "VERIFY_ONLY ran DDL");
                BackgroundFetch<FetchedWorkItem> w = h.parkWorker("verify-only", POLL);
                long t0 = System.nanoTime();
                h.provider.enqueueForWorker(activity("verify-only", 1));
                FetchedWorkItem got = w.get(GET).orElseThrow(() -> new AssertionError("verify-only: no wake"));
                assertTrue(w.millisSince(t0) < 500, "woken after " + w.millisSince(t0) + " ms");
                h.provider.ackWorkItem(got.lockToken(), null);
            }
        } finally {
            TestDatabase.dropSchema(schema);
        }

        IllegalArgumentException tooSmall = assertThrows(IllegalArgumentException.class,
                () -> TestDatabase.config(TestDatabase.newSchemaName("lppool")).longPolling(true).poolSize(1).build());
        assertTrue(tooSmall.getMessage().contains("two connections"), tooSmall.getMessage());
        // the same pool is fine without long polling
        TestDatabase.config(TestDatabase.newSchemaName("lppool")).poolSize(1).build();

        for (Duration bad : new Duration[] {Duration.ofMillis(-1), Duration.ofMillis(11), null}) {
            IllegalArgumentException lead = assertThrows(IllegalArgumentException.class,
                    () -> TestDatabase.config(TestDatabase.newSchemaName("lplead")).longPolling(true).timerLead(bad)
                            .build());
            assertTrue(lead.getMessage().contains("timerLead"), lead.getMessage());
        }
        assertEquals(Duration.ZERO, TestDatabase.config(TestDatabase.newSchemaName("lplead")).longPolling(true)
                .timerLead(Duration.ZERO).build().timerLead(), "zero: wake at the time itself");
    }

    private static SchemaMigrator migrator(String schema) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(TestDatabase.url());
        PostgresProviderConfig config = TestDatabase.config(schema).build();
        return new SchemaMigrator(ds, config);
    }

    /** Relations, functions, triggers, the hub settings (with their row versions) and the migration ledger. */
    private static String fingerprint(String schema) throws SQLException {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT (SELECT count(*) FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace "
                        + "         WHERE n.nspname = ?) || ' relations; '"
                        + " || (SELECT count(*) FROM pg_proc f JOIN pg_namespace n ON n.oid = f.pronamespace "
                        + "         WHERE n.nspname = ?) || ' functions; '"
                        + " || (SELECT coalesce(string_agg(t.tgname::text || '=' || t.tgenabled::text"
                        + "                                      || '@' || t.xmin::text, ',' ORDER BY t.tgname), '')"
                        + "       FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid"
                        + "         JOIN pg_namespace n ON n.oid = r.relnamespace"
                        + "        WHERE n.nspname = ? AND NOT t.tgisinternal)")) {
            ps.setString(1, schema);
            ps.setString(2, schema);
            ps.setString(3, schema);
            String catalog;
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                catalog = rs.getString(1);
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT count(*), max(installed_rank), (SELECT string_agg(s.name || '=' || s.value || '@'"
                            + " || s.xmin::text, ',' ORDER BY s.name) FROM " + LongPollProviderTest.quote(schema)
                            + ".hub_settings s) FROM " + LongPollProviderTest.quote(schema)
                            + ".pgdurable_schema_history")) {
                rs.next();
                return catalog + "; ledger " + rs.getLong(1) + "/" + rs.getLong(2) + "; settings " + rs.getString(3);
            }
        }
    }

    // ------------------------------------------------------------------ 13. close

    @Test
    void close_releases_parked_fetches_promptly_and_stops_every_thread() {
        try (LongPollHarness h = LongPollHarness.open("lpclose")) {
            PostgresProvider p = h.provider;
            h.warmUp();
            String channel = h.channel();
            assertFalse(liveThreads(channel).isEmpty(), "the long-poll threads are running before close");
            List<BackgroundFetch<?>> parked = List.of(
                    h.parkWorker("w1", Duration.ofSeconds(60)), h.parkWorker("w2", Duration.ofSeconds(60)),
                    h.parkOrchestrator("o1", Duration.ofSeconds(60)), h.parkOrchestrator("o2", Duration.ofSeconds(60)));
            long t0 = System.nanoTime();
            p.close();
            long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(closeMs < 2_000, "close() took " + closeMs + " ms");
            for (BackgroundFetch<?> f : parked) {
                assertEquals(Optional.empty(), f.get(GET), "a parked fetch ends empty on close");
                long ms = f.millisSince(t0);
                assertTrue(ms < 500, "a parked fetch returned " + ms + " ms after close began");
            }
            boolean stopped = Waits.within(() -> liveThreads(channel).isEmpty(), Duration.ofSeconds(3));
            assertTrue(stopped, "threads still alive 3 s after close: " + liveThreads(channel));
            ProviderException closed = assertThrows(ProviderException.class,
                    () -> p.fetchWorkItem(LONG_LOCK, POLL, null, TagFilter.any()));
            assertFalse(closed.retryable(), "a closed provider stays closed");
            System.out.println("[lp] close: " + closeMs + " ms; other threads of the channel: "
                    + otherThreads(channel));
        }
    }

    /** Live {@code pgdurable-longpoll-*} and {@code pgdurable-notifier-*} threads of {@code channel}. */
    private static List<String> liveThreads(String channel) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.contains(channel))
                .filter(n -> n.startsWith("pgdurable-longpoll-") || n.startsWith("pgdurable-notifier-"))
                .sorted().collect(Collectors.toList());
    }

    private static List<String> otherThreads(String channel) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.contains(channel)).sorted().collect(Collectors.toList());
    }

    // ------------------------------------------------------------------ 14. scans against an exclusive lock

    @Test
    void a_timer_scan_against_an_exclusive_lock_times_out_and_returns_its_connection() throws SQLException {
        try (LongPollHarness h = LongPollHarness.open("lpscanlock", b -> b.recoveryScanInterval(Duration.ofMillis(300))
                .fallbackPollInterval(Duration.ofSeconds(30)))) {
            PostgresProvider p = h.provider;
            h.warmUp();
            BackgroundFetch<FetchedWorkItem> worker = h.parkWorker("worker-during-lock", Duration.ofSeconds(30));
            int okBefore;
            try (Connection blocker = TestDatabase.connect()) {
                blocker.setAutoCommit(false);
                try (Statement st = blocker.createStatement()) {
                    st.execute("LOCK TABLE " + LongPollProviderTest.quote(h.schema)
                            + ".orchestrator_queue IN ACCESS EXCLUSIVE MODE");
                }
                int timedOut = h.signals.scansTimedOut();
                // More cancelled scans than the pool (4) has connections: a scan that kept its connection, or
                // stayed queued behind the lock, would hold up the ones after it.
                for (int i = 1; i <= 6; i++) {
                    int want = timedOut + i;
                    h.signals.await(() -> h.signals.scansTimedOut() >= want, Duration.ofSeconds(5),
                            "timed-out scan " + i + " while the orchestrator queue is locked");
                    LockActivity a = lockActivity(h.schema);
                    assertTrue(a.lockWaiters() <= 1, "more than one scan waits on the lock: " + a);
                    assertTrue(a.longestLockWaitMs() < 1_000, "a pool connection is left waiting on the lock: " + a);
                    assertEquals(0, a.idleInTransaction(), "a pool connection is left inside a transaction: " + a);
                }
                // the worker queue keeps working while the orchestrator queue's scans fail
                WorkItem.ActivityExecute item = activity("during-lock", 1);
                long t0 = System.nanoTime();
                p.enqueueForWorker(item);
                FetchedWorkItem got = worker.get(GET).orElseThrow(() -> new AssertionError("worker starved"));
                assertEquals(item, got.item());
                assertTrue(worker.millisSince(t0) < 500, "worker woken after " + worker.millisSince(t0) + " ms");
                p.ackWorkItem(got.lockToken(), null);
                okBefore = h.signals.scansOk();
                blocker.rollback();
            }
            h.signals.await(() -> h.signals.scansOk() > okBefore, Duration.ofSeconds(5),
                    "a successful scan after the lock was released");
            Waits.until(() -> lockActivity(h.schema).quiet(), Duration.ofSeconds(5),
                    () -> "no pool connection waiting or in a transaction: " + lockActivity(h.schema));

            BackgroundFetch<FetchedOrchestration> o = h.parkOrchestrator("after-lock", POLL);
            long t1 = System.nanoTime();
            p.enqueueForOrchestrator(start("after-lock"), null);
            FetchedOrchestration turn = o.get(GET).orElseThrow(() -> new AssertionError("no work after the lock"));
            assertEquals("after-lock", turn.item().instance());
            assertTrue(o.millisSince(t1) < 500, "woken after " + o.millisSince(t1) + " ms");
            h.ackTurn(turn);
            System.out.println("[lp] scans under lock: " + h.signals);
        }
    }

    /** What the schema's pgdurable pool connections are doing, from pg_stat_activity. */
    record LockActivity(int lockWaiters, long longestLockWaitMs, int idleInTransaction) {
        boolean quiet() {
            return lockWaiters == 0 && idleInTransaction == 0;
        }
    }

    private static LockActivity lockActivity(String schema) {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'),"
                        + " coalesce(max(extract(epoch FROM clock_timestamp() - query_start) * 1000)"
                        + "          FILTER (WHERE wait_event_type = 'Lock'), 0)::bigint,"
                        + " count(*) FILTER (WHERE state LIKE 'idle in transaction%'"
                        + "                    AND clock_timestamp() - state_change > interval '500 milliseconds')"
                        + " FROM pg_stat_activity"
                        + " WHERE application_name = 'pgdurable' AND position(? in query) > 0")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new LockActivity(rs.getInt(1), rs.getLong(2), rs.getInt(3));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
