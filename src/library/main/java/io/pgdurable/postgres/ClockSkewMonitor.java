package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the provider's application clock honest against the database server's: measures the offset at start (the
 * best of a few comparisons) and again every {@code checkInterval} of its {@link ClockSkewBounds}, warns past
 * their {@code warning}, and past their {@code limit} closes the gate every claim passes ({@link #admit}) until a
 * later check finds the clock back within the limit. Every lease end and visibility time is written and judged by
 * the application clock, and the server's clock is the one all nodes share.
 *
 * <p>An offset counts as past a bound only when it is past it by more than half the measuring round trip (the
 * server's reading could have been taken anywhere within it): a slow round trip never refuses leases by itself.
 *
 * <p>The checks run on a thread of their own: the measuring statement waits on the pool and the network, and the
 * long-poll timer thread, the only scheduled thread a provider may already have, must never wait.
 */
final class ClockSkewMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClockSkewMonitor.class);
    static final String OP = "clockSkewCheck";
    /** Comparisons at start, the best kept: a few round trips, once. */
    static final int START_SAMPLES = 5;
    /** While leases are refused, the clock is checked at least this often: the provider does nothing else. */
    static final Duration REFUSING_RECHECK = Duration.ofSeconds(5);
    private static final long LOG_EVERY_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final ServerClock server;
    private final boolean enabled;
    private final Duration warning;
    private final Duration limit;
    private final long intervalNanos;
    private final String schema;
    private volatile ScheduledExecutorService timer;
    private volatile boolean closed;
    private volatile ServerClock.Offset last;
    /** Why leases are refused, or null while they are not. */
    private volatile String refusal;
    /** Written by the start and then the checking thread only, one after the other. */
    private long lastWarnNanos = System.nanoTime() - LOG_EVERY_NANOS;
    private long lastFailureLogNanos = System.nanoTime() - LOG_EVERY_NANOS;
    /** Checks done, start included; guarded by {@code this}, for the tests that wait for the next. */
    private long checks;

    ClockSkewMonitor(ServerClock server, PostgresProviderConfig config) {
        this.server = server;
        this.enabled = config.clockSkewCheck();
        this.warning = config.clockSkewBounds().warning();
        this.limit = config.clockSkewBounds().limit();
        this.intervalNanos = config.clockSkewBounds().checkInterval().toNanos();
        this.schema = config.schema();
    }

    /**
     * The first measurement; a clock already past the limit stops the start with a retryable error naming the
     * offset. Then the periodic checks begin. Does nothing with the check turned off.
     */
    void start() {
        if (!enabled) {
            return;
        }
        judge(server.measure(OP, START_SAMPLES));
        counted();
        String refused = refusal;
        if (refused != null) {
            throw ProviderException.retryable("start", refused + "; the provider does not start");
        }
        ScheduledExecutorService t = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "pgdurable-clock-" + schema);
            thread.setDaemon(true);
            return thread;
        });
        timer = t;
        scheduleNext(t);
    }

    /** Throws the retryable refusal while the clock is past the limit; returns at once otherwise. */
    void admit(String op) {
        String refused = refusal;
        if (refused != null) {
            throw ProviderException.retryable(op, refused);
        }
    }

    /** Whether leases may be taken now (no refusal). */
    boolean admits() {
        return refusal == null;
    }

    /** The last measured offset (application clock minus server clock), empty before one or with the check off. */
    Optional<Duration> offset() {
        ServerClock.Offset o = last;
        return o == null ? Optional.empty() : Optional.of(Duration.of(o.offsetMicros(), ChronoUnit.MICROS));
    }

    /** How many checks have ended, start included (tests wait for the next with {@link #awaitChecks}). */
    synchronized long checks() {
        return checks;
    }

    /** Waits until more than {@code seen} checks have ended; false when {@code timeout} passed first. */
    synchronized boolean awaitChecks(long seen, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (checks <= seen) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    private synchronized void counted() {
        checks++;
        notifyAll();
    }

    private void check() {
        try {
            judge(server.measure(OP, 1));
        } catch (RuntimeException e) {
            if (closed || server.closed()) {
                return;
            }
            long now = System.nanoTime();
            if (now - lastFailureLogNanos >= LOG_EVERY_NANOS) {
                lastFailureLogNanos = now;
                LOG.warn("pgdurable: schema {}: the clock check failed, the last offset stands until the next "
                        + "one: {}", schema, e.getMessage());
            }
        }
        counted();
        ScheduledExecutorService t = timer;
        if (t != null) {
            scheduleNext(t);
        }
    }

    private void scheduleNext(ScheduledExecutorService t) {
        if (closed) {
            return;
        }
        long delay = refusal == null ? intervalNanos : Math.min(intervalNanos, REFUSING_RECHECK.toNanos());
        try {
            t.schedule(this::check, delay, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            // closed meanwhile
        }
    }

    private void judge(ServerClock.Offset o) {
        last = o;
        long atLeast = o.atLeastMicros();
        String before = refusal;
        if (atLeast > micros(limit)) {
            String why = "the application clock is " + describe(o) + ", past the limit of clockSkewBounds ("
                    + millis(limit) + "): no lease is taken until a check finds it back within the limit; "
                    + "synchronise the clock (NTP, chrony)";
            refusal = why;
            if (before == null) {
                LOG.error("pgdurable: schema {}: {}", schema, why);
            }
            return;
        }
        refusal = null;
        if (before != null) {
            LOG.info("pgdurable: schema {}: the application clock is {}, within the limit of clockSkewBounds ({}) "
                    + "again: leases are taken again", schema, describe(o), millis(limit));
        }
        long now = System.nanoTime();
        if (atLeast > micros(warning) && now - lastWarnNanos >= LOG_EVERY_NANOS) {
            lastWarnNanos = now;
            LOG.warn("pgdurable: schema {}: the application clock is {}, past the warning bound of clockSkewBounds "
                    + "({}); leases are refused past its limit ({}); synchronise the clock (NTP, chrony)", schema,
                    describe(o), millis(warning), millis(limit));
        }
    }

    /** "2003.1 ms ahead of the database server's clock (measured to within 0.2 ms)". */
    static String describe(ServerClock.Offset o) {
        long off = o.offsetMicros();
        return String.format(Locale.ROOT, "%.1f ms %s the database server's clock (measured to within %.1f ms)",
                Math.abs(off) / 1000.0, off >= 0 ? "ahead of" : "behind", o.uncertaintyMicros() / 1000.0);
    }

    private static String millis(Duration d) {
        return d.toMillis() + " ms";
    }

    private static long micros(Duration d) {
        return d.toNanos() / 1000;
    }

    /** Stops the checks at once; a check in its round trip ends on its own (its thread is a daemon). */
    @Override
    public void close() {
        closed = true;
        ScheduledExecutorService t = timer;
        if (t != null) {
            t.shutdownNow();
        }
    }
}
