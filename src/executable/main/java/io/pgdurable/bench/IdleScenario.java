package io.pgdurable.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Idle cost: {@code n} dispatchers (half orchestrator, half worker) wait on empty queues and the server counts
 * what they make it execute per second. Short mode: every dispatcher fetches with poll timeout 0 and sleeps 50 ms;
 * long mode: every dispatcher parks in a fetch with a 30 s poll timeout (re-issued when it ends). Run at several
 * waiter counts to check that long polling stays flat as waiters grow.
 */
final class IdleScenario extends PairedScenario {
    private static final Duration LOCK = Duration.ofSeconds(30);

    @Override
    public String name() {
        return "idle";
    }

    @Override
    public String title() {
        return "Idle statements with parked waiters";
    }

    @Override
    String description() {
        return "Dispatchers wait on empty queues (half orchestrator, half worker) and the server counts the "
                + "statements they cause per second. Short: fetch with pollTimeout 0, then sleep 50 ms. Long: fetch "
                + "with pollTimeout 30 s (parked; re-issued when the timeout ends). Repeated at several waiter counts "
                + "for the flatness check; the long-mode windows are whole multiples of the 30 s poll timeout.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("waiters", p.idleWaiters());
        m.put("sweep", p.idleSweep());
        m.put("warmupSeconds", p.idleWarmup().toMillis() / 1000.0);
        m.put("longWindowSeconds", p.idleWindowLong().toSeconds());
        m.put("longSweepWindowSeconds", p.idleWindowLongSweep().toSeconds());
        m.put("shortWindowSeconds", p.idleWindowShort().toSeconds());
        return m;
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        Profile p = ctx.profile();
        String unit = ctx.counter().source().unit() + "/s";
        ModeResult r = new ModeResult(mode);
        List<Map<String, Object>> sweep = new ArrayList<>();
        Map<Integer, Double> rates = new LinkedHashMap<>();
        for (int waiters : p.idleSweep()) {
            Duration window = mode == Mode.SHORT ? p.idleWindowShort()
                    : waiters == p.idleWaiters() ? p.idleWindowLong() : p.idleWindowLongSweep();
            IdleWindow w = measure(ctx, mode, waiters, window);
            rates.put(waiters, w.rate);
            Map<String, Object> point = new LinkedHashMap<>();
            point.put("waiters", waiters);
            point.put("windowSeconds", Num.round(w.seconds));
            point.put("counted", w.counted);
            point.put("perSecond", Num.round(w.rate));
            if (!Double.isNaN(w.transactionRate)) {
                point.put("transactionsPerSecond", Num.round(w.transactionRate));
            }
            sweep.add(point);
            if (waiters == p.idleWaiters()) {
                r.metric("statementsPerSecond", w.rate, unit, "server " + unit + " with " + waiters
                        + " waiting dispatchers");
                if (!Double.isNaN(w.transactionRate)) {
                    r.metric("transactionsPerSecond", w.transactionRate, "transactions/s", "server transactions/s "
                            + "with " + waiters + " waiting dispatchers, from pg_stat_database, which also counts "
                            + "round trips that are no statement (a pool's empty validation query)");
                }
                r.series("timeline", w.timeline);
                r.detail("topStatements", w.top);
                if (mode == Mode.LONG) {
                    r.detail("longPollSignals", w.signals);
                }
            }
        }
        int lo = p.idleSweep().get(0);
        int hi = p.idleSweep().get(p.idleSweep().size() - 1);
        r.metric("statementsPerSecondAt" + lo, rates.get(lo), unit, "with " + lo + " waiters");
        r.metric("statementsPerSecondAt" + hi, rates.get(hi), unit, "with " + hi + " waiters");
        r.metric("perWaiterSlope", (rates.get(hi) - rates.get(lo)) / (hi - lo), unit + " per waiter",
                "growth per added waiter from " + lo + " to " + hi);
        r.detail("sweep", sweep);
        return r;
    }

    /** One counted idle window. */
    private record IdleWindow(double rate, long counted, double seconds, List<double[]> timeline,
                              List<Map<String, Object>> top, Map<String, Long> signals, double transactionRate) {}

    private IdleWindow measure(BenchContext ctx, Mode mode, int waiters, Duration window) throws Exception {
        Profile p = ctx.profile();
        ServerStatementCounter counter = ctx.counter();
        Workers dispatchers = new Workers();
        try (Hub hub = ctx.hub(name(), mode, 8);
             Workers.Stopping stopFirst = dispatchers.stopFirst()) {
            int orchestrators = waiters / 2;
            dispatchers.start("idle-orch", orchestrators,
                    i -> () -> mode.pollOrchestration(hub.provider(), LOCK));
            dispatchers.start("idle-work", waiters - orchestrators,
                    i -> () -> mode.pollWork(hub.provider(), LOCK));
            if (mode == Mode.LONG && !hub.awaitParked(waiters, 20_000)) {
                throw new IllegalStateException("only " + hub.waiting() + " of " + waiters + " fetches parked");
            }
            Pause.sleep(p.idleWarmup().toMillis());
            dispatchers.check();
            Map<String, Long> signals0 = hub.signals().snapshot();
            Map<String, Long> stmts0 = counter.byStatement();
            boolean alsoTransactions = counter.source() == ServerStatementCounter.Source.PG_STAT_STATEMENTS;
            long x0 = alsoTransactions ? counter.transactions() : 0;
            long c0 = counter.total();
            long t0 = System.nanoTime();
            long prev = c0;
            List<double[]> timeline = new ArrayList<>();
            long windowNanos = window.toNanos();
            long step = Math.min(1_000_000_000L, windowNanos);
            long nextReport = 10_000_000_000L;
            for (long at = step; at <= windowNanos; at += step) {
                long sleep = (t0 + at - System.nanoTime()) / 1_000_000L;
                Pause.sleep(sleep);
                long c = counter.total();
                timeline.add(new double[] {at / 1e9, (c - prev) / (step / 1e9)});
                prev = c;
                if (at >= nextReport) {
                    ctx.progress().line("idle: %s, %d waiters: %d/%d s, %s %s/s so far", mode.key(), waiters,
                            at / 1_000_000_000L, window.toSeconds(), Num.text((c - c0) / (at / 1e9)),
                            counter.source().unit());
                    nextReport += 10_000_000_000L;
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            long counted = prev - c0;
            double transactionRate = alsoTransactions ? (counter.transactions() - x0) / seconds : Double.NaN;
            List<Map<String, Object>> top = ServerStatementCounter.top(stmts0, counter.byStatement(), 8);
            Map<String, Long> signals = CountingSignals.delta(signals0, hub.signals().snapshot());
            dispatchers.check();
            dispatchers.stop();
            double rate = counted / (timeline.size() * (step / 1e9));
            ctx.progress().line("idle: %s, %d waiters: %s %s/s over %.0f s", mode.key(), waiters, Num.text(rate),
                    counter.source().unit(), seconds);
            return new IdleWindow(rate, counted, seconds, timeline, top, signals, transactionRate);
        } finally {
            dispatchers.stop();
            dispatchers.join();
        }
    }
}
