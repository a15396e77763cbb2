package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgdurable.metrics.PgDurableMetrics;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application clock against the server's: a small offset is measured to within a few milliseconds, a clock past
 * the limit of {@code clockSkewBounds} is refused at start and, while running, takes no lease until it is back;
 * under the limit the tests measure what a skewed clock does to leases and delays (docs/operations.md, "Clock skew between nodes
 * and the server", quotes these figures).
 *
 * <p>The server runs on this machine, so the system clock is the server's clock; a provider on the system clock
 * measures an offset of about zero, which the tests check before they rely on it.
 */
class ClockSkewTest {
    private static final Logger LOG = LoggerFactory.getLogger(ClockSkewTest.class);
    /** The lease of the measurements: a few seconds, above the skew. */
    private static final Duration LEASE = Duration.ofSeconds(3);
    private static final long SKEW_MS = 2_000;
    /** How far a measured offset may be from the true one on loopback: half a round trip of a busy machine. */
    private static final long MEASURE_TOLERANCE_MS = 20;
    /**
     * The same for a periodic check, a single round trip (the start takes the best of five): these only need to tell
     * a clock 2 s off from a right one.
     */
    private static final long CHECK_TOLERANCE_MS = 200;
    /** How far a moment found by polling may be off: the polling pace, a claim's round trip, a busy machine. */
    private static final long POLL_SLACK_MS = 150;
    private static final long POLL_PACE_MS = 5;
    /** Bounds wide enough for a 2 s skew, to see what it does. */
    private static final UnaryOperator<PostgresProviderConfig.Builder> WIDE = b -> b
            .clockSkewBounds(new ClockSkewBounds(Duration.ofSeconds(1), Duration.ofSeconds(3), Duration.ofSeconds(60)));

    private final List<PostgresProvider> providers = new ArrayList<>();
    private String schema;

    @BeforeEach
    void name() {
        schema = TestDatabase.newSchemaName("skew");
    }

    @AfterEach
    void drop() {
        providers.forEach(PostgresProvider::close);
        TestDatabase.dropSchema(schema);
    }

    private PostgresProvider open(Clock clock, UnaryOperator<PostgresProviderConfig.Builder> tune) {
        PostgresProvider p = PostgresProvider.create(tune.apply(TestDatabase.config(schema).clock(clock)).build());
        providers.add(p);
        return p;
    }

    // ------------------------------------------------------------------ settings

    @Test
    void the_bounds_default_to_fractions_of_a_five_second_lease_and_bad_ones_are_refused_naming_the_setting() {
        PostgresProviderConfig defaults = TestDatabase.config("x").build();
        assertTrue(defaults.clockSkewCheck());
        assertEquals(Duration.ofMillis(500), defaults.clockSkewBounds().warning());
        assertEquals(Duration.ofSeconds(1), defaults.clockSkewBounds().limit());
        assertEquals(Duration.ofSeconds(60), defaults.clockSkewBounds().checkInterval());

        Duration second = Duration.ofSeconds(1);
        assertEquals("clockSkewBounds: limit must be above warning, was PT1S with warning PT1S",
                assertThrows(IllegalArgumentException.class, () -> new ClockSkewBounds(second, second, second))
                        .getMessage());
        assertEquals("clockSkewBounds: warning must be a positive duration, was PT0S",
                assertThrows(IllegalArgumentException.class,
                        () -> new ClockSkewBounds(Duration.ZERO, second, second)).getMessage());
        assertEquals("clockSkewBounds: limit must be a positive duration, was null",
                assertThrows(IllegalArgumentException.class, () -> new ClockSkewBounds(second, null, second))
                        .getMessage());
        assertEquals("clockSkewBounds: checkInterval must be at least PT0.01S, was PT0.009S",
                assertThrows(IllegalArgumentException.class,
                        () -> ClockSkewBounds.DEFAULT.withCheckInterval(Duration.ofMillis(9))).getMessage());
        assertEquals("clockSkewBounds",
                assertThrows(NullPointerException.class, () -> TestDatabase.config("x").clockSkewCheck(false)
                        .clockSkewBounds(null).build()).getMessage());
    }

    // ------------------------------------------------------------------ measuring

    @Test
    void a_small_skew_is_reported_by_the_accessor_and_the_gauge_to_within_a_few_milliseconds() {
        MeterRegistry aheadMeters = new SimpleMeterRegistry();
        MeterRegistry behindMeters = new SimpleMeterRegistry();
        PostgresProvider right = open(Clock.systemUTC(), b -> b);
        PostgresProvider ahead = open(new OffsetClock(50), b -> b.metrics(new PgDurableMetrics(aheadMeters)));
        PostgresProvider behind = open(new OffsetClock(-50), b -> b.metrics(new PgDurableMetrics(behindMeters)));

        assertWithin(0, MEASURE_TOLERANCE_MS, offsetMs(right), "the system clock against the server's");
        assertWithin(50, MEASURE_TOLERANCE_MS, offsetMs(ahead), "a clock 50 ms ahead");
        assertWithin(-50, MEASURE_TOLERANCE_MS, offsetMs(behind), "a clock 50 ms behind");

        Gauge gauge = aheadMeters.find("pgdurable.clock.offset").tags("schema", schema).gauge();
        assertEquals("seconds", gauge.getId().getBaseUnit());
        assertEquals(offsetMs(ahead) / 1000.0, gauge.value(), 1e-9, "the gauge shows the accessor's offset");
        assertEquals(offsetMs(behind) / 1000.0,
                behindMeters.find("pgdurable.clock.offset").tags("schema", schema).gauge().value(), 1e-9);

        PostgresProvider unchecked = open(new OffsetClock(50), b -> b.clockSkewCheck(false));
        assertEquals(Optional.empty(), unchecked.clockOffset(), "nothing measured with the check off");
    }

    // ------------------------------------------------------------------ past the limit

    @Test
    void a_clock_two_seconds_off_does_not_start_with_the_default_limit_and_the_error_names_offset_and_setting() {
        for (long skew : new long[] {SKEW_MS, -SKEW_MS}) {
            ProviderException e = assertThrows(ProviderException.class, () -> open(new OffsetClock(skew), b -> b));
            assertTrue(e.retryable(), "the clock can be corrected: " + e);
            assertRefusal(e, skew);
        }
        PostgresProvider right = open(Clock.systemUTC(), b -> b);
        assertWithin(0, MEASURE_TOLERANCE_MS, offsetMs(right), "the right clock starts on the same schema");
    }

    @Test
    void leases_are_refused_while_the_clock_is_past_the_limit_and_taken_again_once_it_is_back() throws Exception {
        refusesAndResumes(false);
    }

    @Test
    void a_long_polling_provider_refuses_and_resumes_the_same_way() throws Exception {
        refusesAndResumes(true);
    }

    private void refusesAndResumes(boolean longPolling) throws Exception {
        OffsetClock clock = new OffsetClock(0);
        PostgresProvider p = open(clock, b -> b.longPolling(longPolling)
                .clockSkewBounds(ClockSkewBounds.DEFAULT.withCheckInterval(Duration.ofMillis(20))));
        PostgresProvider writer = open(Clock.systemUTC(), b -> b);
        writer.enqueueForWorker(activity(1));
        writer.enqueueForWorker(activity(2));
        FetchedWorkItem held = p.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();

        clock.set(SKEW_MS);
        awaitFreshCheck(p);
        assertWithin(SKEW_MS, CHECK_TOLERANCE_MS, offsetMs(p), "the offset while refusing");
        writer.enqueueForOrchestrator(new WorkItem.StartOrchestration("o", "O", "{}", "1.0.0"), null);
        writer.enqueueForWorker(activity(3));
        Duration poll = Duration.ofSeconds(5); // refused at once, never parked
        assertRefusal(assertThrows(ProviderException.class,
                () -> p.fetchWorkItem(LEASE, poll, null, TagFilter.defaultOnly())), SKEW_MS);
        assertRefusal(assertThrows(ProviderException.class,
                () -> p.fetchWorkItems(LEASE, WorkBatch.upTo(10), null, TagFilter.defaultOnly())), SKEW_MS);
        assertRefusal(assertThrows(ProviderException.class,
                () -> p.fetchOrchestrationItem(LEASE, poll, null)), SKEW_MS);
        // The ack of the item it holds stands, and no next item is leased.
        assertEquals(Optional.empty(), p.ackWorkItemAndFetchNext(held.lockToken(), null, LEASE, null,
                TagFilter.defaultOnly()));
        assertEquals(List.of(2L, 3L), longs("SELECT activity_id FROM " + q() + ".worker_queue ORDER BY id"));
        assertEquals(List.of(), longs("SELECT activity_id FROM " + q()
                + ".worker_queue WHERE lock_token IS NOT NULL"));
        assertEquals(List.of(), longs("SELECT 1 FROM " + q() + ".instance_locks"));

        clock.set(0);
        awaitFreshCheck(p);
        assertWithin(0, CHECK_TOLERANCE_MS, offsetMs(p), "the offset once corrected");
        assertEquals(2, ((WorkItem.ActivityExecute) p.fetchWorkItem(LEASE, Duration.ZERO, null,
                TagFilter.defaultOnly()).orElseThrow().item()).id());
        assertEquals("o", p.fetchOrchestrationItem(LEASE, Duration.ZERO, null).orElseThrow().item().instance());
        assertEquals(List.of(3L), p.fetchWorkItems(LEASE, WorkBatch.upTo(10), null, TagFilter.defaultOnly()).stream()
                .map(f -> ((WorkItem.ActivityExecute) f.item()).id()).toList());
    }

    // ------------------------------------------------------------------ under the limit: what a skew does

    @Test
    void under_the_limit_a_clock_ahead_takes_a_lease_and_a_delayed_message_early_by_its_skew() throws Exception {
        PostgresProvider right = open(Clock.systemUTC(), WIDE);
        PostgresProvider ahead = open(new OffsetClock(SKEW_MS), WIDE);
        assertWithin(0, MEASURE_TOLERANCE_MS, offsetMs(right), "the system clock is the server's here");
        assertWithin(SKEW_MS, MEASURE_TOLERANCE_MS, offsetMs(ahead), "measured, and under the limit");

        right.enqueueForWorker(activity(1));
        right.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
        long leaseEnd = longs("SELECT locked_until_ms FROM " + q() + ".worker_queue").get(0);
        long takenAt = firstSuccess(() -> ahead.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.defaultOnly())
                .isPresent());
        assertWithin(SKEW_MS, POLL_SLACK_MS, leaseEnd - takenAt, "a lease taken early by the skew, no more");

        right.enqueueForOrchestrator(new WorkItem.StartOrchestration("d", "O", "{}", "1.0.0"), LEASE);
        long visibleAt = longs("SELECT visible_at_ms FROM " + q() + ".orchestrator_queue").get(0);
        long returnedAt = firstSuccess(() -> ahead.fetchOrchestrationItem(LEASE, Duration.ZERO, null).isPresent());
        assertWithin(SKEW_MS, POLL_SLACK_MS, visibleAt - returnedAt, "a delayed message returned early by the skew");
    }

    @Test
    void under_the_limit_a_clock_behind_writes_leases_and_delays_that_end_early_by_its_skew() throws Exception {
        PostgresProvider right = open(Clock.systemUTC(), WIDE);
        PostgresProvider behind = open(new OffsetClock(-SKEW_MS), WIDE);
        assertWithin(0, MEASURE_TOLERANCE_MS, offsetMs(right), "the system clock is the server's here");
        assertWithin(-SKEW_MS, MEASURE_TOLERANCE_MS, offsetMs(behind), "measured, and under the limit");

        behind.enqueueForWorker(activity(1));
        long claimedAt = System.currentTimeMillis();
        behind.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
        long takenAt = firstSuccess(() -> right.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.defaultOnly())
                .isPresent());
        assertWithin(LEASE.toMillis() - SKEW_MS, POLL_SLACK_MS, takenAt - claimedAt,
                "its lease of 3 s lasted 3 s less the skew");

        long enqueuedAt = System.currentTimeMillis();
        behind.enqueueForOrchestrator(new WorkItem.StartOrchestration("d", "O", "{}", "1.0.0"), LEASE);
        long returnedAt = firstSuccess(() -> right.fetchOrchestrationItem(LEASE, Duration.ZERO, null).isPresent());
        assertWithin(LEASE.toMillis() - SKEW_MS, POLL_SLACK_MS, returnedAt - enqueuedAt,
                "its delay of 3 s lasted 3 s less the skew");
    }

    // ------------------------------------------------------------------ helpers

    private static WorkItem.ActivityExecute activity(long id) {
        return new WorkItem.ActivityExecute("i", 1, id, "A", "{}", null, null);
    }

    private static double offsetMs(PostgresProvider p) {
        return p.clockOffset().orElseThrow().toNanos() / 1e6;
    }

    private static void assertWithin(double expected, double tolerance, double actual, String what) {
        LOG.info("measured: {}: {} (expected {} ± {})", what, actual, expected, tolerance);
        assertTrue(actual >= expected - tolerance && actual <= expected + tolerance,
                what + ": expected " + expected + " ± " + tolerance + ", was " + actual);
    }

    private static final Pattern OFFSET = Pattern.compile(
            "the application clock is (\\d+\\.\\d) ms (ahead of|behind) the database server's clock");

    /** The refusal names the offset (within what one check may be off by) and the setting. */
    private static void assertRefusal(ProviderException e, long skew) {
        String m = e.getMessage();
        assertTrue(e.retryable(), m);
        Matcher offset = OFFSET.matcher(m);
        assertTrue(offset.find(), "names the offset: " + m);
        assertEquals(skew > 0 ? "ahead of" : "behind", offset.group(2), m);
        assertWithin(Math.abs(skew), CHECK_TOLERANCE_MS, Math.round(Double.parseDouble(offset.group(1))), m);
        assertTrue(m.contains("past the limit of clockSkewBounds (1000 ms)"), "names the setting: " + m);
    }

    /** Waits for a check that read the clock after this call: the one under way may have read it before. */
    private static void awaitFreshCheck(PostgresProvider p) throws InterruptedException {
        ClockSkewMonitor monitor = p.clockSkewMonitor();
        long seen = monitor.checks();
        assertTrue(monitor.awaitChecks(seen + 1, Duration.ofSeconds(10)), "two more checks within 10 s");
    }

    /**
     * The system time just before the first attempt that succeeded; attempts go at a steady pace (the measurement's
     * resolution, not a synchronisation), for at most 10 s.
     */
    private static long firstSuccess(BooleanSupplier attempt) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            long at = System.currentTimeMillis();
            if (attempt.getAsBoolean()) {
                return at;
            }
            TimeUnit.MILLISECONDS.sleep(POLL_PACE_MS);
        }
        throw new AssertionError("no attempt succeeded within 10 s");
    }

    private String q() {
        return Identifiers.quote(schema);
    }

    private static List<Long> longs(String sql) throws SQLException {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(sql)) {
            List<Long> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getLong(1));
                }
            }
            return out;
        }
    }
}
