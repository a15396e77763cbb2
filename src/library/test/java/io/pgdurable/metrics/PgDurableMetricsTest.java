package io.pgdurable.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.longpoll.ChannelListener;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The meters move as the provider works, on a real PostgreSQL: each test runs a scenario on a schema of its own and
 * reads the meters from a {@link SimpleMeterRegistry}.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class PgDurableMetricsTest {
    private static final Duration LOCK = Duration.ofSeconds(60);

    private final List<String> schemas = new ArrayList<>();
    private final List<AutoCloseable> closing = new ArrayList<>();
    private final ExecutorService background = Executors.newCachedThreadPool();
    private final MeterRegistry registry = new SimpleMeterRegistry();
    private String schema;

    @AfterEach
    void cleanUp() throws Exception {
        background.shutdownNow();
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        schemas.forEach(TestDatabase::dropSchema);
    }

    private String newSchema() {
        schema = TestDatabase.newSchemaName("metrics");
        schemas.add(schema);
        return schema;
    }

    /**
     * Long polling with a heartbeat long enough that the listener's backend keeps showing its LISTEN (so a test can
     * find it), and no fallback probe within a test's time unless it asks for one: a probe could take a wake that
     * the test expects from elsewhere.
     */
    private PostgresProviderConfig.Builder longPolling() {
        return TestDatabase.config(schema).longPolling(true).heartbeatInterval(Duration.ofMinutes(5))
                .fallbackPollInterval(Duration.ofHours(1));
    }

    private PostgresProvider open(PostgresProviderConfig.Builder b) {
        PostgresProvider p = PostgresProvider.create(b.build());
        closing.add(p);
        return p;
    }

    private PostgresProvider openMeasured(PostgresProviderConfig.Builder b) {
        return open(b.metrics(new PgDurableMetrics(registry)));
    }

    // ------------------------------------------------------------------------------------------ meter reads

    private Tags own(String... tags) {
        return Tags.of("schema", schema).and(tags);
    }

    private double counter(String name, String... tags) {
        Counter c = registry.find(name).tags(own(tags)).counter();
        assertNotNull(c, "no counter " + name + " " + own(tags));
        return c.count();
    }

    private double gauge(String name, String... tags) {
        Gauge g = registry.find(name).tags(own(tags)).gauge();
        assertNotNull(g, "no gauge " + name + " " + own(tags));
        return g.value();
    }

    private long calls(String operation, String queue, String outcome) {
        Timer t = registry.find("pgdurable.operations").tags(own("operation", operation, "queue", queue, "outcome",
                outcome)).timer();
        return t == null ? 0 : t.count();
    }

    private double wakes(String queue, String source) {
        return counter("pgdurable.wakes", "queue", queue, "source", source);
    }

    /** Polls observable state (a meter) until it holds, within {@code within}; fails naming what did not happen. */
    private static void await(String what, Duration within, BooleanSupplier condition) {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + within.toMillis() + " ms: " + what);
            }
            pause();
        }
    }

    /** The polling interval of a bounded wait on observable state (never a synchronisation by itself). */
    private static void pause() {
        try {
            Thread.sleep(10);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    private static void awaitValue(String what, double expected, DoubleSupplier value) {
        await(what + " = " + expected, Duration.ofSeconds(15), () -> value.getAsDouble() == expected);
    }

    private static WorkItem.ActivityExecute activity(long id) {
        return new WorkItem.ActivityExecute("inst", 1, id, "A", "{}");
    }

    private static Optional<FetchedWorkItem> fetchNow(PostgresProvider p) {
        return p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly());
    }

    /** A long-polled fetch in the background, parked once its first claim found nothing. */
    private Future<Optional<FetchedWorkItem>> parkFetch(PostgresProvider p, long fetchesBefore) {
        Future<Optional<FetchedWorkItem>> f = background.submit(() -> p.fetchWorkItem(LOCK, Duration.ofSeconds(20),
                null, TagFilter.defaultOnly()));
        awaitValue("parked worker fetches", 1, () -> gauge("pgdurable.fetches.parked", "queue", "worker"));
        awaitValue("worker claims", fetchesBefore + 1, () -> calls("fetch", "worker", "ok"));
        return f;
    }

    // ------------------------------------------------------------------------------------------ tests

    @Test
    void each_queue_operation_is_timed_by_verb_queue_and_outcome() {
        newSchema();
        PostgresProvider p = openMeasured(TestDatabase.config(schema));
        for (String verb : List.of("fetch", "ack", "enqueue", "renew", "abandon")) {
            for (String queue : List.of("orchestrator", "worker")) {
                Timer t = registry.find("pgdurable.operations").tags(own("operation", verb, "queue", queue, "outcome",
                        "ok")).timer();
                assertNotNull(t, "registered before any call: " + verb + " " + queue);
                assertEquals(0, t.count());
            }
        }

        p.enqueueForWorker(activity(1));
        assertEquals(1, calls("enqueue", "worker", "ok"));
        FetchedWorkItem got = fetchNow(p).orElseThrow();
        assertEquals(1, calls("fetch", "worker", "ok"));
        p.renewWorkItemLock(got.lockToken(), Duration.ofSeconds(30));
        assertEquals(1, calls("renew", "worker", "ok"));
        p.ackWorkItem(got.lockToken(), null);
        assertEquals(1, calls("ack", "worker", "ok"));
        assertEquals(0, calls("ack", "worker", "permanent"));

        ProviderException again = assertThrows(ProviderException.class, () -> p.ackWorkItem(got.lockToken(), null));
        assertFalse(again.retryable(), again.getMessage());
        assertEquals(1, calls("ack", "worker", "permanent"), "a failed ack is timed with its outcome");
        assertEquals(1, calls("ack", "worker", "ok"));

        p.enqueueForOrchestrator(new WorkItem.StartOrchestration("o1", "O", "{}", null), null);
        assertEquals(1, calls("enqueue", "orchestrator", "ok"));
        FetchedOrchestration turn = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(1, calls("fetch", "orchestrator", "ok"));
        p.renewOrchestrationItemLock(turn.lockToken(), Duration.ofSeconds(30));
        assertEquals(1, calls("renew", "orchestrator", "ok"));
        p.abandonOrchestrationItem(turn.lockToken(), Duration.ZERO, true);
        assertEquals(1, calls("abandon", "orchestrator", "ok"));

        Timer enqueue = registry.find("pgdurable.operations").tags(own("operation", "enqueue", "queue", "worker",
                "outcome", "ok")).timer();
        assertTrue(enqueue.totalTime(TimeUnit.NANOSECONDS) > 0, "a duration was recorded");
        assertNull(registry.find("pgdurable.listener.up").tags(own()).gauge(), "no listener without long polling");
        assertNotNull(registry.find("hikaricp.connections").tag("pool", "pgdurable-" + schema).gauge(),
                "the owned pool's own meters are bound");
    }

    @Test
    void a_parked_fetch_woken_by_another_process_counts_a_notification_wake_and_a_local_one_an_announcement() {
        newSchema();
        // The own write is a batched enqueue, which is announced (the hand-over's wake is the next test's subject).
        PostgresProvider p = openMeasured(longPolling());
        // Announces by NOTIFY (the schema is activated); without hand-over across processes, so the fetch claims.
        PostgresProvider other = open(TestDatabase.config(schema).handOverAcrossProcesses(false));
        awaitValue("listener up", 1, () -> gauge("pgdurable.listener.up"));

        Future<Optional<FetchedWorkItem>> parked = parkFetch(p, 0);
        double received = counter("pgdurable.notifications.received"); // its own arrival's echo, at most
        other.enqueueForWorker(activity(1));
        FetchedWorkItem first = get(parked).orElseThrow(() -> new AssertionError("the notification did not wake it"));
        assertEquals(1, wakes("worker", "notification"));
        assertEquals(0, wakes("worker", "announcement"));
        assertTrue(counter("pgdurable.notifications.received") >= received + 1);
        p.ackWorkItem(first.lockToken(), null);

        Future<Optional<FetchedWorkItem>> parkedAgain = parkFetch(p, 2);
        p.enqueueAllForWorker(List.of(activity(2))); // this process's own write: woken without the round trip
        FetchedWorkItem second = get(parkedAgain).orElseThrow();
        assertEquals(1, wakes("worker", "announcement"));
        assertEquals(1, wakes("worker", "notification"));
        assertEquals(0, counter("pgdurable.wakes.useless", "queue", "worker"));
        p.ackWorkItem(second.lockToken(), null);
        awaitValue("parked fetches after both returned", 0, () -> gauge("pgdurable.fetches.parked", "queue",
                "worker"));
        // The other provider does not long-poll, so nobody else listens: the own write's announcement is not sent.
        await("the announcement nobody else would hear", Duration.ofSeconds(5),
                () -> counter("pgdurable.announcements.unheard") >= 1);
        assertEquals(0, counter("pgdurable.announcements.sent", "path", "announcer"));
    }

    @Test
    void a_parked_fetch_given_an_own_write_by_hand_over_counts_a_handover_wake_and_no_announcement() {
        newSchema();
        PostgresProvider p = openMeasured(longPolling());
        awaitValue("listener up", 1, () -> gauge("pgdurable.listener.up"));
        Future<Optional<FetchedWorkItem>> parked = parkFetch(p, 0);
        p.enqueueForWorker(activity(1));
        FetchedWorkItem got = get(parked).orElseThrow(() -> new AssertionError("the hand-over did not reach it"));
        assertEquals(1, got.attemptCount());
        assertEquals(1, wakes("worker", "handover"));
        assertEquals(0, wakes("worker", "announcement"));
        assertEquals(0, counter("pgdurable.wakes.useless", "queue", "worker"));
        p.ackWorkItem(got.lockToken(), null);
    }

    @Test
    void the_listener_reconnects_after_its_backend_is_terminated() throws Exception {
        newSchema();
        openMeasured(longPolling());
        awaitValue("listener up", 1, () -> gauge("pgdurable.listener.up"));
        await("the first scan after LISTEN", Duration.ofSeconds(10), () -> counter("pgdurable.scans", "outcome", "ok")
                >= 1);
        double scans = counter("pgdurable.scans", "outcome", "ok");
        assertEquals(0, counter("pgdurable.listener.reconnects"));
        assertEquals(0, counter("pgdurable.listener.lost"));

        terminate(listenerPid(NotifyChannel.forSchema(schema)));
        awaitValue("reconnects", 1, () -> counter("pgdurable.listener.reconnects"));
        assertEquals(1, counter("pgdurable.listener.lost"));
        awaitValue("listener up again", 1, () -> gauge("pgdurable.listener.up"));
        await("a scan after the new LISTEN", Duration.ofSeconds(10),
                () -> counter("pgdurable.scans", "outcome", "ok") > scans);
    }

    @Test
    void the_fallback_probe_runs_while_a_fetch_waits_and_wakes_it_for_unannounced_work() {
        newSchema();
        PostgresProvider p = openMeasured(longPolling().fallbackPollInterval(Duration.ofMillis(200)));
        awaitValue("listener up", 1, () -> gauge("pgdurable.listener.up"));
        assertEquals(0, counter("pgdurable.probes"), "no probe while nothing waits");

        // A writer that announces nothing: the schema deactivated, its triggers off, a provider that sees that.
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(TestDatabase.url());
        new SchemaMigrator(ds, TestDatabase.config(schema).build()).deactivate();
        PostgresProvider silent = open(TestDatabase.config(schema).handOverAcrossProcesses(false).migrationPolicy(
                io.pgdurable.postgres.MigrationPolicy.VERIFY_ONLY));

        Future<Optional<FetchedWorkItem>> parked = parkFetch(p, 0);
        await("a fallback probe", Duration.ofSeconds(5), () -> counter("pgdurable.probes") >= 1);
        silent.enqueueForWorker(activity(1));
        FetchedWorkItem got = get(parked).orElseThrow(() -> new AssertionError("the probe did not wake it"));
        // The prober counts its wake after handing it out, so the fetch may return before the counter moves.
        await("woken by the probe", Duration.ofSeconds(5), () -> wakes("worker", "probe") >= 1);
        assertEquals(0, wakes("worker", "notification"), "nothing was announced");
        assertEquals(0, wakes("worker", "announcement"));
        p.ackWorkItem(got.lockToken(), null);
    }

    @Test
    void a_fetch_beyond_max_parked_waiters_counts_a_capacity_refusal() {
        newSchema();
        PostgresProvider p = openMeasured(longPolling().maxParkedWaiters(1));
        awaitValue("listener up", 1, () -> gauge("pgdurable.listener.up"));
        Future<Optional<FetchedWorkItem>> parked = parkFetch(p, 0);
        assertEquals(0, counter("pgdurable.capacity.refused", "queue", "worker"));
        assertThrows(CapacityExceededException.class, () -> p.fetchWorkItem(LOCK, Duration.ofSeconds(5), null,
                TagFilter.defaultOnly()));
        assertEquals(1, counter("pgdurable.capacity.refused", "queue", "worker"));
        assertEquals(0, counter("pgdurable.capacity.refused", "queue", "orchestrator"));
        p.enqueueForWorker(activity(1));
        p.ackWorkItem(get(parked).orElseThrow().lockToken(), null);
    }

    @Test
    void queue_depths_are_read_at_most_once_per_refresh_interval() {
        newSchema();
        PostgresProvider p = open(TestDatabase.config(schema).metrics(new PgDurableMetrics(registry)
                .withQueueDepthRefresh(Duration.ofHours(1))));
        p.enqueueForWorker(activity(1));
        p.enqueueForWorker(activity(2));
        assertEquals(2, gauge("pgdurable.queue.depth", "queue", "worker"), "the first read is fresh");
        assertEquals(0, gauge("pgdurable.queue.depth", "queue", "orchestrator"));
        p.enqueueForWorker(activity(3));
        assertEquals(2, gauge("pgdurable.queue.depth", "queue", "worker"), "within the interval: the same read");

        MeterRegistry fast = new SimpleMeterRegistry();
        open(TestDatabase.config(schema).metrics(new PgDurableMetrics(fast)
                .withQueueDepthRefresh(Duration.ofMillis(100))));
        Gauge depth = fast.find("pgdurable.queue.depth").tags("schema", schema, "queue", "worker").gauge();
        assertEquals(3, depth.value());
        p.enqueueForWorker(activity(4));
        awaitValue("depth after the refresh interval", 4, depth::value);
    }

    @Test
    void a_closed_provider_removes_its_meters_and_two_providers_need_distinct_tags() {
        newSchema();
        PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema)
                .metrics(new PgDurableMetrics(registry)).build());
        try {
            assertFalse(registry.find("hikaricp.connections").tag("pool", "pgdurable-" + schema).gauges().isEmpty());
            IllegalStateException twin = assertThrows(IllegalStateException.class, () -> PostgresProvider.create(
                    TestDatabase.config(schema).metrics(new PgDurableMetrics(registry)).build()));
            assertTrue(twin.getMessage().contains("withTags"), twin.getMessage());
            PostgresProvider tagged = open(TestDatabase.config(schema).metrics(new PgDurableMetrics(registry)
                    .withTags(Tags.of("instance", "b")).withoutPoolMetrics()));
            tagged.enqueueForWorker(activity(1));
            Timer taggedEnqueues = registry.find("pgdurable.operations").tags(own("operation", "enqueue", "queue",
                    "worker", "outcome", "ok", "instance", "b")).timer();
            assertEquals(1, taggedEnqueues.count(), "the tagged provider's own timer");
            assertEquals(0, untagged("enqueue").stream().mapToLong(Timer::count).sum(),
                    "the untagged provider's timer did not move");
            assertEquals(1, untagged("enqueue").size());
        } finally {
            p.close();
        }
        assertTrue(untagged("enqueue").isEmpty(), "the closed provider's timers are gone");
        assertTrue(registry.find("pgdurable.wakes").tags(own()).counters().stream()
                .allMatch(c -> "b".equals(c.getId().getTag("instance"))), "the closed provider's counters are gone");
        assertTrue(registry.find("hikaricp.connections").tag("pool", "pgdurable-" + schema).gauges().isEmpty(),
                "the closed pool's meters are gone");
        assertThrows(IllegalArgumentException.class, () -> new PgDurableMetrics(registry)
                .withTags(Tags.of("schema", "x")));
    }

    /** The timers of {@code verb} on the worker queue (ok) of providers without an {@code instance} tag. */
    private List<Timer> untagged(String verb) {
        return registry.find("pgdurable.operations").tags(own("operation", verb, "queue", "worker", "outcome", "ok"))
                .timers().stream().filter(t -> t.getId().getTag("instance") == null).toList();
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static <T> T get(Future<T> f) {
        try {
            return f.get(15, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("the background fetch did not end: " + e, e);
        }
    }

    /** The listener backend LISTENing on {@code channel} (its last statement stays the LISTEN: long heartbeat). */
    private static int listenerPid(String channel) throws SQLException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE query = ? "
                     + "AND application_name = ? AND pid <> pg_backend_pid()")) {
            ps.setString(1, "LISTEN " + NotifyChannel.quoted(channel));
            ps.setString(2, ChannelListener.APPLICATION_NAME);
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return rs.getInt(1);
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no listener backend LISTENs on " + channel);
                }
                pause();
            }
        }
    }

    private static void terminate(int pid) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next() && rs.getBoolean(1), "could not terminate backend " + pid);
            }
        }
    }
}
