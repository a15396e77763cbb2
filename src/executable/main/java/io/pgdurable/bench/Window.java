package io.pgdurable.bench;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A counted measurement window over running workers: after a warm-up, how many units completed per second, what
 * the server executed per unit and what the provider's backends waited on, with progress every few seconds.
 *
 * @param units      units completed inside the window
 * @param seconds    the window's length
 * @param statements server statements (or transactions) inside the window
 * @param transactions server transactions inside the window (pg_stat_database; -1 when that is the counter anyway)
 * @param top        the statements the server ran most inside the window (pg_stat_statements only)
 * @param waits      what the provider's active backends waited on, sampled through the window
 * @param spent      what the window cost: server and client CPU, WAL, client write calls
 */
record Window(long units, double seconds, long statements, long transactions,
              java.util.List<java.util.Map<String, Object>> top, java.util.Map<String, Object> waits,
              UnitCosts.Spent spent) {

    double perSecond() {
        return units / seconds;
    }

    double statementsPer() {
        return units == 0 ? Double.NaN : (double) statements / units;
    }

    /** Transactions per unit beside pg_stat_statements' statements per unit; NaN without pg_stat_statements. */
    double transactionsPer() {
        return units == 0 || transactions < 0 ? Double.NaN : (double) transactions / units;
    }

    /**
     * Records what the server executed per unit: {@code <prefix>statementsPer<Unit>} and, beside
     * pg_stat_statements, {@code <prefix>transactionsPer<Unit>}; then what one unit cost:
     * {@code <prefix>serverCpuMsPer<Unit>}, {@code clientCpuMsPer<Unit>}, {@code walBytesPer<Unit>} and
     * {@code roundTripsPer<Unit>} (NaN where this machine cannot measure them).
     */
    void perUnit(ModeResult r, BenchContext ctx, String prefix, String unit) {
        String name = Character.toUpperCase(unit.charAt(0)) + unit.substring(1);
        String counted = ctx.counter().source().unit();
        r.metric(prefix + "statementsPer" + name, statementsPer(), counted + "/" + unit,
                "server " + counted + " per " + unit + " (" + ctx.counter().source().view() + ")");
        if (!Double.isNaN(transactionsPer())) {
            r.metric(prefix + "transactionsPer" + name, transactionsPer(), "transactions/" + unit,
                    "server transactions per " + unit + " (pg_stat_database)");
        }
        r.metric(prefix + "serverCpuMsPer" + name, per(spent.serverCpuMillis()), "ms/" + unit,
                "server CPU per " + unit + " (every process of the cluster)");
        r.metric(prefix + "clientCpuMsPer" + name, per(spent.clientCpuMillis()), "ms/" + unit,
                "client CPU per " + unit + " (the bench's JVM: provider and dispatchers)");
        r.metric(prefix + "walBytesPer" + name, per(spent.walBytes()), "bytes/" + unit,
                "WAL bytes per " + unit);
        r.metric(prefix + "roundTripsPer" + name, per(spent.clientWrites()), "round trips/" + unit,
                "round trips per " + unit + " (the client's write calls)");
    }

    private double per(double total) {
        return units == 0 ? Double.NaN : total / units;
    }

    static Window measure(BenchContext ctx, Workers workers, AtomicLong done, Duration warmup, Duration window,
                          String label, String unit) throws Exception {
        return measureEach(ctx, workers, java.util.List.of(done), warmup, window, label, unit).get(0);
    }

    /**
     * As {@link #measure}, for groups of workers counted side by side over the same window: one window per counter,
     * its units from that counter; the statements and waits are the whole window's, shared by all. A window is
     * extended until every counter has moved (see below).
     */
    static java.util.List<Window> measureEach(BenchContext ctx, Workers workers, java.util.List<AtomicLong> done,
                                              Duration warmup, Duration window, String label, String unit)
            throws Exception {
        Pause.sleep(warmup.toMillis());
        workers.check();
        java.util.Map<String, Long> byStatement0 = ctx.counter().byStatement();
        WaitEventSampler sampler = ctx.waits();
        sampler.start();
        UnitCosts.Reading c0 = ctx.costs().read();
        boolean both = ctx.counter().source() == ServerStatementCounter.Source.PG_STAT_STATEMENTS;
        long x0 = both ? ctx.counter().transactions() : 0;
        long s0 = ctx.counter().total();
        long[] d0 = snapshot(done);
        long t0 = System.nanoTime();
        long end = t0 + window.toNanos();
        long nextReport = t0 + 5_000_000_000L;
        // A window in which nothing completed measures nothing (a batch cycle can outlast a quick profile's window
        // on a busy machine): it is extended, up to ten times its length, until one unit is done.
        long latest = t0 + 10 * window.toNanos();
        while (System.nanoTime() < end || (anyIdle(done, d0) && System.nanoTime() < latest)) {
            Pause.sleep(Math.max(1, Math.min(250, (end - System.nanoTime()) / 1_000_000L)));
            workers.check();
            if (System.nanoTime() >= nextReport) {
                long sum = 0;
                for (int i = 0; i < done.size(); i++) {
                    sum += done.get(i).get() - d0[i];
                }
                ctx.progress().line("%s: %s %s/s so far", label,
                        Num.text(sum / ((System.nanoTime() - t0) / 1e9)), unit);
                nextReport += 5_000_000_000L;
            }
        }
        long[] d1 = snapshot(done);
        double seconds = (System.nanoTime() - t0) / 1e9;
        UnitCosts.Reading c1 = ctx.costs().read();
        long s1 = ctx.counter().total();
        long x1 = both ? ctx.counter().transactions() : -1;
        java.util.Map<String, Object> waits = sampler.stop();
        java.util.List<java.util.Map<String, Object>> top =
                ServerStatementCounter.top(byStatement0, ctx.counter().byStatement(), 8);
        java.util.List<Window> out = new java.util.ArrayList<>();
        for (int i = 0; i < done.size(); i++) {
            out.add(new Window(d1[i] - d0[i], seconds, s1 - s0, both ? x1 - x0 : -1, top, waits,
                    UnitCosts.between(c0, c1)));
        }
        return out;
    }

    private static long[] snapshot(java.util.List<AtomicLong> done) {
        long[] at = new long[done.size()];
        for (int i = 0; i < at.length; i++) {
            at[i] = done.get(i).get();
        }
        return at;
    }

    private static boolean anyIdle(java.util.List<AtomicLong> done, long[] d0) {
        for (int i = 0; i < d0.length; i++) {
            if (done.get(i).get() == d0[i]) {
                return true;
            }
        }
        return false;
    }
}
