package io.pgdurable.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Quiet after a burst: 32 worker dispatchers of one provider (one process) wait; a burst of items
 * is enqueued in batches and drained (fetch + ack, every item acked exactly once); then the server counts what the
 * idle dispatchers cost per second over the next window. Every claim of the burst announced a lease end that comes
 * due long after its item was acked, most of them inside that window (how many is reported): the figure shows what
 * those stale lease ends cost. The same dispatchers' idle cost before the burst is measured as the baseline.
 *
 * <p>The provider runs on a pool this scenario owns, so that before each counted window it can touch every pooled
 * connection once: pg_stat_database (the counter without pg_stat_statements) hears of a backend's transactions up to
 * 10 s late when the backend went idle within a second of its last report, and the burst's last second would
 * otherwise be counted inside the quiet window.
 */
final class BurstQuietScenario extends PairedScenario {
    static final int CONSUMERS = 32;
    private static final int POOL = 8;
    private static final int BATCH = 500;
    /** Quiet after the last ack before the pool is touched: every backend's last stats report is older than 1 s. */
    private static final long SETTLE_MS = 1_500;

    @Override
    public String name() {
        return "burst-quiet";
    }

    @Override
    public String title() {
        return "Quiet after a burst drained by " + CONSUMERS + " parked consumers";
    }

    @Override
    String description() {
        return CONSUMERS + " worker dispatchers of one provider wait on an empty queue; a burst of items is enqueued "
                + "in batches of " + BATCH + " and drained (fetch + ack; every item acked exactly once); then the "
                + "server counts the statements per second of the window that follows (the claims' lease ends fall "
                + "inside it). Baseline: the same dispatchers idle before the burst. Short: fetch with pollTimeout 0, "
                + "then sleep 50 ms; long: fetch with pollTimeout 30 s.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("consumers", CONSUMERS);
        m.put("items", p.burstItems());
        m.put("batch", BATCH);
        m.put("lockTimeoutSeconds", p.burstLock().toMillis() / 1000.0);
        m.put("windowSeconds", p.burstWindow().toMillis() / 1000.0);
        m.put("baselineSeconds", p.burstBaseline().toMillis() / 1000.0);
        m.put("poolSize", POOL);
        return m;
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        Profile p = ctx.profile();
        int items = p.burstItems();
        Duration lock = p.burstLock();
        String unit = ctx.counter().source().unit();
        AtomicIntegerArray acks = new AtomicIntegerArray(items);
        AtomicLongArray claimedAt = new AtomicLongArray(items);
        AtomicLong fetched = new AtomicLong();
        AtomicLong acked = new AtomicLong();
        AtomicLong lastAckNanos = new AtomicLong();
        Workers consumers = new Workers();
        ModeResult r = new ModeResult(mode);
        try (HikariDataSource pool = pool(ctx.url())) {
            try (Hub hub = ctx.hub(name(), mode, POOL, b -> b.jdbcUrl(null).dataSource(pool)
                    .listenerUrl(ctx.url()));
                 Workers.Stopping stopFirst = consumers.stopFirst()) {
                OrchestrationProvider provider = hub.provider();
                consumers.start("bq-work", CONSUMERS, i -> () -> {
                    Optional<FetchedWorkItem> f = mode.pollWork(provider, lock);
                    if (f.isPresent()) {
                        claimedAt.set((int) ((WorkItem.ActivityExecute) f.get().item()).id(), System.nanoTime());
                        fetched.incrementAndGet();
                        provider.ackWorkItem(f.get().lockToken(), null);
                        acks.incrementAndGet((int) ((WorkItem.ActivityExecute) f.get().item()).id());
                        lastAckNanos.set(System.nanoTime());
                        acked.incrementAndGet();
                    }
                });
                if (mode == Mode.LONG && !hub.awaitParked(CONSUMERS, 20_000)) {
                    throw new IllegalStateException("only " + hub.waiting() + " of " + CONSUMERS
                            + " fetches parked");
                }
                Pause.sleep(p.idleWarmup().toMillis());
                consumers.check();
                touchEveryConnection(pool);
                Count baseline = count(ctx, hub, consumers, p.burstBaseline(), "baseline");

                long t0 = System.nanoTime();
                List<WorkItem> batch = new ArrayList<>(BATCH);
                for (int i = 0; i < items; i++) {
                    batch.add(new WorkItem.ActivityExecute("burst", 1, i, "Burst", "{}"));
                    if (batch.size() == BATCH || i == items - 1) {
                        provider.enqueueAllForWorker(batch);
                        batch = new ArrayList<>(BATCH);
                    }
                }
                double enqueueSeconds = (System.nanoTime() - t0) / 1e9;
                long drainDeadline = System.nanoTime() + Math.max(60_000_000_000L, lock.toNanos() / 2);
                long nextReport = System.nanoTime() + 5_000_000_000L;
                while (acked.get() < items) {
                    if (System.nanoTime() > drainDeadline) {
                        throw new IllegalStateException("burst-quiet: only " + acked.get() + " of " + items
                                + " items acked after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
                    }
                    consumers.check();
                    if (System.nanoTime() > nextReport) {
                        ctx.progress().line("burst-quiet: %s, %d of %d items acked", mode.key(), acked.get(),
                                items);
                        nextReport += 5_000_000_000L;
                    }
                    Pause.sleep(5);
                }
                double drainSeconds = (lastAckNanos.get() - t0) / 1e9;
                if (drainSeconds * 1e9 >= lock.toNanos()) {
                    notes.add(mode.key() + ": the drain took " + Num.text(drainSeconds) + " s, longer than the "
                            + lock.toSeconds() + " s lock timeout: some lease ends fell before the window");
                }
                ctx.progress().line("burst-quiet: %s, %d items enqueued in %.1f s, drained in %.1f s", mode.key(),
                        items, enqueueSeconds, drainSeconds);
                Pause.sleep(SETTLE_MS - (System.nanoTime() - lastAckNanos.get()) / 1_000_000);
                touchEveryConnection(pool);
                long windowStart = System.nanoTime();
                double windowStartsAfterLastAck = (windowStart - lastAckNanos.get()) / 1e9;
                Count quiet = count(ctx, hub, consumers, p.burstWindow(), "after the burst");
                long windowEnd = windowStart + p.burstWindow().toNanos();
                int once = 0;
                int leaseEndsInWindow = 0;
                for (int i = 0; i < items; i++) {
                    once += acks.get(i) == 1 ? 1 : 0;
                    long leaseEnd = claimedAt.get(i) + lock.toNanos();
                    leaseEndsInWindow += leaseEnd >= windowStart && leaseEnd < windowEnd ? 1 : 0;
                }
                if (once != items || fetched.get() != items) {
                    throw new IllegalStateException("burst-quiet: " + once + " of " + items + " items acked exactly "
                            + "once, " + fetched.get() + " fetches returned an item");
                }
                consumers.stop();

                r.metric("statementsPerSecond", quiet.rate, unit + "/s", "server " + unit + "/s over the "
                        + p.burstWindow().toSeconds() + " s after the burst was drained (lease ends of its claims "
                        + "inside)");
                r.metric("baselineStatementsPerSecond", baseline.rate, unit + "/s", "server " + unit + "/s of the "
                        + "same idle dispatchers before the burst");
                r.metric("itemsDrainedPerSecond", items / drainSeconds, "items/s", "burst items fetched and acked "
                        + "per second by " + CONSUMERS + " consumers");
                r.metric("itemsAckedOnce", once, "items", "of " + items + ", each acked exactly once");
                r.metric("leaseEndsInWindow", leaseEndsInWindow, "items", "of the burst's " + items + " lease ends ("
                        + lock.toSeconds() + " s after each claim), inside the counted window");
                r.series("timeline", quiet.timeline);
                r.series("baselineTimeline", baseline.timeline);
                r.detail("drainSeconds", Num.round(drainSeconds));
                r.detail("enqueueSeconds", Num.round(enqueueSeconds));
                r.detail("windowStartsSecondsAfterLastAck", Num.round(windowStartsAfterLastAck));
                r.detail("lockTimeoutSeconds", lock.toMillis() / 1000.0);
                r.detail("counted", quiet.counted);
                r.detail("baselineCounted", baseline.counted);
                r.detail("topStatements", quiet.top);
                if (mode == Mode.LONG) {
                    r.detail("longPollSignals", quiet.signals);
                    r.detail("baselineLongPollSignals", baseline.signals);
                }
            } finally {
                consumers.stop();
                consumers.join();
            }
        }
        return r;
    }

    /** One counted window: the rate, the per-second timeline, the top statements and the long-poll signals. */
    private record Count(double rate, long counted, List<double[]> timeline, List<Map<String, Object>> top,
                         Map<String, Long> signals) {}

    private Count count(BenchContext ctx, Hub hub, Workers consumers, Duration window, String what)
            throws Exception {
        ServerStatementCounter counter = ctx.counter();
        Map<String, Long> signals0 = hub.signals().snapshot();
        Map<String, Long> stmts0 = counter.byStatement();
        long c0 = counter.total();
        long t0 = System.nanoTime();
        long prev = c0;
        List<double[]> timeline = new ArrayList<>();
        long windowNanos = window.toNanos();
        long step = Math.min(1_000_000_000L, windowNanos);
        long nextReport = 10_000_000_000L;
        for (long at = step; at <= windowNanos; at += step) {
            Pause.sleep((t0 + at - System.nanoTime()) / 1_000_000L);
            long c = counter.total();
            timeline.add(new double[] {at / 1e9, (c - prev) / (step / 1e9)});
            prev = c;
            consumers.check();
            if (at >= nextReport) {
                ctx.progress().line("burst-quiet: %s, %s: %d/%d s, %s %s/s so far", hub.mode().key(), what,
                        at / 1_000_000_000L, window.toSeconds(), Num.text((c - c0) / (at / 1e9)),
                        counter.source().unit());
                nextReport += 10_000_000_000L;
            }
        }
        long counted = prev - c0;
        double rate = counted / (timeline.size() * (step / 1e9));
        ctx.progress().line("burst-quiet: %s, %s: %s %s/s over %d s", hub.mode().key(), what, Num.text(rate),
                counter.source().unit(), window.toSeconds());
        return new Count(rate, counted, timeline, ServerStatementCounter.top(stmts0, counter.byStatement(), 8),
                CountingSignals.delta(signals0, hub.signals().snapshot()));
    }

    /** The provider's pool, configured as the provider configures the one it owns for a URL. */
    private static HikariDataSource pool(String url) {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(url);
        hc.setPoolName("pgdurable-bench-burst-quiet");
        hc.setMaximumPoolSize(POOL);
        hc.setMinimumIdle(2);
        hc.setConnectionTimeout(5_000);
        hc.setAutoCommit(true);
        hc.addDataSourceProperty("ApplicationName", "pgdurable");
        return new HikariDataSource(hc);
    }

    /**
     * Borrows every pooled connection at once (so each backend is reached), more than a second after the last busy
     * moment. HikariCP validates a connection idle for more than 500 ms with an empty query before handing it out,
     * which is a transaction on the server: at its end the backend reports everything pending to pg_stat_database,
     * as its last report is more than a second old. No statement of its own: one run right after that report would
     * itself be reported only when the backend's 10 s idle timer fires, inside the window.
     */
    private static void touchEveryConnection(HikariDataSource pool) throws SQLException {
        List<Connection> held = new ArrayList<>(POOL);
        try {
            for (int i = 0; i < POOL; i++) {
                held.add(pool.getConnection());
            }
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
    }
}
