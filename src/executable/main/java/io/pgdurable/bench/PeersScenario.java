package io.pgdurable.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * pgdurable beside a peer, graphile-worker (pinned by the lock file in {@code io/pgdurable/bench/graphile/}), on the
 * same database in the same run: a single-job drain, a batched drain and a wake series each repetition, the two
 * systems one after the other in each part, pgdurable first in odd repetitions and graphile-worker first in even ones,
 * so a drift of the machine falls on both alike. Figures are medians of the repetitions and ratios are
 * pgdurable ÷ graphile-worker; the report's short column holds graphile-worker, the long column pgdurable.
 */
final class PeersScenario implements Scenario {
    static final String NAME = "peers";
    static final int CONSUMERS = DrainScenario.CONSUMERS;
    static final int MIN_GAP_MS = 5;
    static final int MAX_GAP_MS = 25;
    /** Sporadic writers: a job every 0.2-1.2 s, so every process and connection on the way sits idle in between. */
    static final int SPORADIC_MIN_GAP_MS = 200;
    static final int SPORADIC_MAX_GAP_MS = 1_200;
    /** Unrecorded sporadic wakes before each sporadic series. */
    static int sporadicWarmUp(Counts c) {
        return c.sporadicJobs() < 10 ? 1 : 2;
    }
    private static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration QUICK_CALL = Duration.ofMinutes(1);
    /** Job numbers of one repetition's parts start here times the repetition, as in the drain scenario. */
    private static final long REP_STRIDE = 10_000_000L;
    private static final long WARM_UP_OFFSET = 5_000_000L;
    private static final long BATCHED_OFFSET = 2_000_000L;
    private static final long WAKE_OFFSET = 7_000_000L;
    private static final long SPORADIC_OFFSET = 8_000_000L;

    /**
     * How much to run. The bench's profile sets it; the system properties {@code pgdurable.bench.peers.drainItems},
     * {@code .wakeJobs}, {@code .sporadicJobs} and {@code .reps} override it.
     */
    record Counts(int drainItems, int wakeJobs, int sporadicJobs, int reps) {
        Counts {
            if (drainItems < 1 || wakeJobs < 1 || sporadicJobs < 1 || reps < 1) {
                throw new IllegalArgumentException("peers: counts must be positive: " + drainItems + ", " + wakeJobs
                        + ", " + sporadicJobs + ", " + reps);
            }
        }

        static Counts of(Profile p) {
            return new Counts(Integer.getInteger("pgdurable.bench.peers.drainItems", p.quick() ? 600 : 20_000),
                    Integer.getInteger("pgdurable.bench.peers.wakeJobs", p.quick() ? 30 : 500),
                    Integer.getInteger("pgdurable.bench.peers.sporadicJobs", p.quick() ? 2 : 30),
                    Integer.getInteger("pgdurable.bench.peers.reps", p.quick() ? 2 : 4));
        }

        /** Unrecorded wakes before each series: the first ones run on cold code and connections. */
        int wakeWarmUp() {
            return Math.max(2, Math.min(25, wakeJobs / 10));
        }
    }

    /** The two systems, in the report's column order. */
    enum Arm {
        GRAPHILE("graphile-worker"),
        PGDURABLE("pgdurable");

        final String label;

        Arm(String label) {
            this.label = label;
        }
    }

    /** The wake series: who writes, how often. */
    enum WakeSeries {
        WAKE("wake", Arm.GRAPHILE, null, MIN_GAP_MS, MAX_GAP_MS),
        PROVIDER("wake", Arm.PGDURABLE, WakeProducer.Writer.PROVIDER, MIN_GAP_MS, MAX_GAP_MS),
        SPORADIC("wakeSporadic", Arm.GRAPHILE, null, SPORADIC_MIN_GAP_MS, SPORADIC_MAX_GAP_MS),
        SPORADIC_PROVIDER("wakeSporadic", Arm.PGDURABLE, WakeProducer.Writer.PROVIDER, SPORADIC_MIN_GAP_MS,
                SPORADIC_MAX_GAP_MS),
        SPORADIC_SQL("wakeSporadicSql", Arm.PGDURABLE, WakeProducer.Writer.SQL, SPORADIC_MIN_GAP_MS,
                SPORADIC_MAX_GAP_MS);

        final String key;
        final Arm arm;
        final WakeProducer.Writer writer;
        final int minGapMs;
        final int maxGapMs;

        WakeSeries(String key, Arm arm, WakeProducer.Writer writer, int minGapMs, int maxGapMs) {
            this.key = key;
            this.arm = arm;
            this.writer = writer;
            this.minGapMs = minGapMs;
            this.maxGapMs = maxGapMs;
        }

        boolean sporadic() {
            return minGapMs == SPORADIC_MIN_GAP_MS;
        }

        int jobs(Counts c) {
            return sporadic() ? c.sporadicJobs() : c.wakeJobs();
        }

        int warmUp(Counts c) {
            return sporadic() ? sporadicWarmUp(c) : c.wakeWarmUp();
        }

        long offset() {
            return sporadic() ? SPORADIC_OFFSET + (writer == WakeProducer.Writer.SQL ? 500_000L : 0) : WAKE_OFFSET;
        }
    }

    /** The drain parts: what each arm runs. */
    enum Part {
        SINGLE("drainSingle", DrainScenario.Arm.SINGLE, false),
        BATCHED("drainBatched", DrainScenario.Arm.BATCHED, true);

        final String key;
        final DrainScenario.Arm pgdurable;
        final boolean graphileBatched;

        Part(String key, DrainScenario.Arm pgdurable, boolean graphileBatched) {
            this.key = key;
            this.pgdurable = pgdurable;
            this.graphileBatched = graphileBatched;
        }
    }

    private final Counts fixed;

    PeersScenario() {
        this(null);
    }

    /** With {@code counts} instead of the profile's (tests). */
    PeersScenario(Counts counts) {
        this.fixed = counts;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String title() {
        return "pgdurable beside graphile-worker (peer, same database, same run)";
    }

    static String description(Counts c) {
        return "graphile-worker (Node.js, the version below, pinned by a lock file) and pgdurable on the same database "
                + "in the same run, " + c.reps() + " repetition(s); in each part of a repetition one system runs after "
                + "the other, pgdurable first in odd repetitions and graphile-worker first in even ones; each drain "
                + "and wake series of either system runs on a fresh schema of its own. Column short = "
                + "graphile-worker, long = pgdurable; ratios are pgdurable ÷ graphile-worker. **drainSingle**: "
                + c.drainItems() + " pre-filled jobs (untimed fill), " + CONSUMERS + " consumers; pgdurable: "
                + "fetchWorkItem + ackWorkItem one item per call, default configuration plus long polling; "
                + "graphile-worker: one runner, concurrency " + CONSUMERS + ", its defaults (no local queue), a no-op "
                + "task. **drainBatched**: pgdurable fetchWorkItems (100) + ackWorkItems; graphile-worker localQueue "
                + "size 100 and completeJobBatchDelay 0. Jobs/s = jobs ÷ (consumers start → last completion): for "
                + "pgdurable from the consumer threads' start to the last ack returned; for graphile-worker from its "
                + "worker pool's creation (after run() handled options and checked migrations) to the last completing "
                + "DELETE returned (graphile-worker does not await its completions, so a task's return is not the "
                + "end). Both arms drain an untimed warm-up of a tenth as many jobs first (at least 400) with the "
                + "same settings. Each job is checked completed exactly once (pgdurable counts acks per id, "
                + "graphile-worker's task counts the job number in its payload) and the queue empty afterwards. "
                + "**wake**: " + c.wakeJobs() + " jobs per repetition (after " + c.wakeWarmUp() + " unrecorded), "
                + "enqueued one at a time " + MIN_GAP_MS + "-" + MAX_GAP_MS + " ms apart (random) from another "
                + "connection, each after the previous one started; pgdurable: a provider with default settings in "
                + "another JVM enqueues, " + CONSUMERS + " long-poll fetches are parked; graphile-worker: addJob "
                + "from worker utils on a pool of its own, a runner of concurrency " + CONSUMERS + " waits. "
                + "**wakeSporadic**: the same with " + c.sporadicJobs() + " jobs per repetition (after "
                + sporadicWarmUp(c) + " unrecorded) " + SPORADIC_MIN_GAP_MS + "-" + SPORADIC_MAX_GAP_MS + " ms apart; "
                + "**wakeSporadicSql**: pgdurable's sporadic series written by a plain-SQL writer in that other JVM "
                + "(the SQL API's enqueue_activity on its own JDBC connection; graphile-worker's addJob is its SQL "
                + "function too). Latency = consumer start (fetch returned / task function entered) − enqueue call "
                + "returned (after its commit), on the machine's monotonic clock (System.nanoTime in both JVMs, "
                + "process.hrtime in Node, whose producer and consumers share its process). Statements per job count "
                + "the whole database during the timed drain (the counter's source is above). graphile-worker logs only warnings (NO_LOG_SUCCESS).";
    }

    /** One repetition's figures of one arm. */
    /** One timed drain of either arm, per job where the name says so; costs are the whole cluster's. */
    private record Drained(double jobsPerSecond, double statementsPerJob, double serverCpuMsPerJob,
                           double walBytesPerJob) {}

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        long start = System.nanoTime();
        Counts c = fixed != null ? fixed : Counts.of(ctx.profile());
        Map<Part, Map<Arm, List<Drained>>> drains = new LinkedHashMap<>();
        for (Part part : Part.values()) {
            drains.put(part, new LinkedHashMap<>(Map.of(Arm.GRAPHILE, new ArrayList<>(), Arm.PGDURABLE,
                    new ArrayList<>())));
        }
        Map<WakeSeries, LatencyRecorder> wake = new java.util.EnumMap<>(WakeSeries.class);
        Map<WakeSeries, List<Object>> wakeReps = new java.util.EnumMap<>(WakeSeries.class);
        for (WakeSeries series : WakeSeries.values()) {
            wake.put(series, new LatencyRecorder());
            wakeReps.put(series, new ArrayList<>());
        }
        List<String> order = new ArrayList<>();
        Map<String, Object> graphileDetails = new LinkedHashMap<>();
        List<Object> startupMillis = new ArrayList<>();
        ctx.progress().line("peers: starting graphile-worker (Node.js; packages installed with npm ci when missing)");
        String version = null;
        String nodeVersion = null;
        for (int rep = 1; rep <= c.reps(); rep++) {
            List<Arm> arms = rep % 2 == 1 ? List.of(Arm.PGDURABLE, Arm.GRAPHILE)
                    : List.of(Arm.GRAPHILE, Arm.PGDURABLE);
            order.add(arms.get(0).label + " first");
            for (Part part : Part.values()) {
                String run = runName(rep, part == Part.SINGLE ? "single" : "batched");
                for (Arm arm : arms) {
                    Drained d;
                    if (arm == Arm.PGDURABLE) {
                        d = pgdurableDrain(ctx, run, part, c, rep);
                    } else {
                        try (GraphileWorkerPeer graphile = graphile(ctx, run)) {
                            version = graphile.version();
                            nodeVersion = graphile.nodeVersion();
                            d = graphileDrain(ctx, graphile, part, c, rep, startupMillis);
                        }
                    }
                    drains.get(part).get(arm).add(d);
                    ctx.progress().line("peers rep %d: %s %s %s jobs/s", rep, part.key, arm.label,
                            Num.text(d.jobsPerSecond()));
                }
            }
            for (boolean sporadic : new boolean[] {false, true}) {
                for (Arm arm : arms) {
                    for (WakeSeries series : WakeSeries.values()) {
                        if (series.arm != arm || series.sporadic() != sporadic) {
                            continue;
                        }
                        String run = runName(rep, series.name().toLowerCase(java.util.Locale.ROOT));
                        long base = rep * REP_STRIDE + series.offset();
                        List<Long> samples;
                        Map<String, Long> sources = Map.of();
                        if (arm == Arm.PGDURABLE) {
                            ProviderWake.Series ps = ProviderWake.run(ctx, run, series.writer, series.jobs(c),
                                    series.warmUp(c), base, series.minGapMs, series.maxGapMs);
                            samples = ps.samples();
                            sources = ps.wakeSources();
                        } else {
                            try (GraphileWorkerPeer graphile = graphile(ctx, run)) {
                                samples = graphileWake(graphile, series, c, base);
                            }
                        }
                        LatencyRecorder one = new LatencyRecorder();
                        for (long s : samples) {
                            one.recordNanos(s);
                            wake.get(series).recordNanos(s);
                        }
                        LatencySummary sum = one.summary();
                        Map<String, Object> figures = new LinkedHashMap<>();
                        figures.put("p50", Num.round(sum.p50Ms()));
                        figures.put("p99", Num.round(sum.p99Ms()));
                        if (!sources.isEmpty()) {
                            figures.put("wokenBy", sources);
                        }
                        wakeReps.get(series).add(figures);
                        ctx.progress().line("peers rep %d: %s %s p50 %s ms p99 %s ms%s", rep, series.key, arm.label,
                                Num.text(sum.p50Ms()), Num.text(sum.p99Ms()), sources.isEmpty() ? "" : " " + sources);
                    }
                }
            }
        }
        graphileDetails.put("version", version);
        graphileDetails.put("node", nodeVersion);
        graphileDetails.put("drainStartupMillis", startupMillis);

        ModeResult g = new ModeResult(Mode.SHORT);
        ModeResult p = new ModeResult(Mode.LONG);
        for (Part part : Part.values()) {
            for (Arm arm : Arm.values()) {
                List<Drained> ds = drains.get(part).get(arm);
                ModeResult r = arm == Arm.PGDURABLE ? p : g;
                r.metric(part.key + ".jobsPerSecond",
                        Num.median(ds.stream().mapToDouble(Drained::jobsPerSecond).toArray()), "jobs/s",
                        part.key + ": jobs drained per second (median of " + ds.size() + ")");
                r.metric(part.key + ".statementsPerJob",
                        Num.median(ds.stream().mapToDouble(Drained::statementsPerJob).toArray()),
                        ctx.counter().source().unit() + "/job", part.key + ": server " + ctx.counter().source()
                                .unit() + " per job in the timed drain, whole database");
                r.metric(part.key + ".serverCpuMsPerJob",
                        Num.median(ds.stream().mapToDouble(Drained::serverCpuMsPerJob).toArray()), "ms/job",
                        part.key + ": server CPU per job in the timed drain, every process of the cluster");
                r.metric(part.key + ".walBytesPerJob",
                        Num.median(ds.stream().mapToDouble(Drained::walBytesPerJob).toArray()), "bytes/job",
                        part.key + ": WAL bytes per job in the timed drain");
                r.detail(part.key + ".reps", ds.stream().map(d -> Num.round(d.jobsPerSecond())).toList());
            }
            List<Drained> pd = drains.get(part).get(Arm.PGDURABLE);
            List<Drained> gd = drains.get(part).get(Arm.GRAPHILE);
            double[] ratios = new double[pd.size()];
            for (int i = 0; i < ratios.length; i++) {
                ratios[i] = pd.get(i).jobsPerSecond() / gd.get(i).jobsPerSecond();
            }
            p.metric(part.key + ".ratioToGraphile", Num.median(ratios), "× graphile-worker",
                    part.key + ": pgdurable ÷ graphile-worker, median of the repetitions' ratios");
            p.detail(part.key + ".ratiosPerRep", Arrays.stream(ratios).mapToObj(Num::round).toList());
        }
        for (WakeSeries series : WakeSeries.values()) {
            (series.arm == Arm.PGDURABLE ? p : g).latency(series.key, wake.get(series))
                    .detail(series.key + ".reps", wakeReps.get(series));
        }
        for (WakeSeries[] pair : new WakeSeries[][] {{WakeSeries.PROVIDER, WakeSeries.WAKE},
                {WakeSeries.SPORADIC_PROVIDER, WakeSeries.SPORADIC}, {WakeSeries.SPORADIC_SQL, WakeSeries.SPORADIC}}) {
            LatencySummary pw = wake.get(pair[0]).summary();
            LatencySummary gw = wake.get(pair[1]).summary();
            String key = pair[0].key;
            p.metric(key + ".p50RatioToGraphile", pw.p50Ms() / gw.p50Ms(), "× graphile-worker",
                    key + " p50: pgdurable ÷ graphile-worker's " + pair[1].key + ", all repetitions' samples");
            p.metric(key + ".p99RatioToGraphile", pw.p99Ms() / gw.p99Ms(), "× graphile-worker",
                    key + " p99: pgdurable ÷ graphile-worker's " + pair[1].key + ", all repetitions' samples");
        }
        p.detail("order", order);
        g.detail("graphileWorker", graphileDetails);

        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("graphileWorkerVersion", version);
        settings.put("node", nodeVersion);
        settings.put("columns", Map.of(Mode.SHORT.key(), Arm.GRAPHILE.label, Mode.LONG.key(), Arm.PGDURABLE.label));
        settings.put("drainItems", c.drainItems());
        settings.put("wakeJobs", c.wakeJobs());
        settings.put("wakeWarmUp", c.wakeWarmUp());
        settings.put("reps", c.reps());
        settings.put("consumers", CONSUMERS);
        settings.put("batch", DrainScenario.BATCH);
        settings.put("wakeGapMillis", List.of(MIN_GAP_MS, MAX_GAP_MS));
        settings.put("sporadicJobs", c.sporadicJobs());
        settings.put("sporadicGapMillis", List.of(SPORADIC_MIN_GAP_MS, SPORADIC_MAX_GAP_MS));
        return new ScenarioResult(NAME, title(), description(c) + " graphile-worker " + version + " on Node.js "
                + nodeVersion + ".", settings, g, p, List.of(), (System.nanoTime() - start) / 1e9);
    }

    private static Drained pgdurableDrain(BenchContext ctx, String run, Part part, Counts c, int rep)
            throws Exception {
        DrainScenario.Run drained = DrainScenario.drain(ctx, run, Mode.LONG, part.pgdurable, c.drainItems(), rep);
        int n = c.drainItems();
        return new Drained(n / drained.seconds(), (double) drained.statements() / n, drained.serverCpuMs() / n,
                drained.walBytes() / n);
    }

    /**
     * Warm-up fill and drain, then the timed fill and drain; fails unless every job was completed exactly once and
     * the table is empty afterwards.
     */
    private static Drained graphileDrain(BenchContext ctx, GraphileWorkerPeer graphile, Part part, Counts c, int rep,
                                         List<Object> startupMillis) {
        long base = rep * REP_STRIDE + (part == Part.BATCHED ? BATCHED_OFFSET : 0);
        int warmUp = DrainScenario.warmUpItems(c.drainItems());
        graphile.fill(base + WARM_UP_OFFSET, warmUp, DRAIN_TIMEOUT);
        exactlyOnce(graphile.drain(base + WARM_UP_OFFSET, warmUp, part.graphileBatched, DRAIN_TIMEOUT), warmUp,
                part, "warm-up");
        graphile.fill(base, c.drainItems(), DRAIN_TIMEOUT);
        DrainScenario.Server before = DrainScenario.Server.read(ctx);
        GraphileWorkerPeer.Drain d = graphile.drain(base, c.drainItems(), part.graphileBatched, DRAIN_TIMEOUT);
        DrainScenario.Run spent = DrainScenario.Run.between(d.seconds(), before, DrainScenario.Server.read(ctx));
        exactlyOnce(d, c.drainItems(), part, "drain");
        long left = graphile.left(QUICK_CALL);
        if (left > 0) {
            throw new AssertionError("peers " + part.key + " graphile-worker: " + left
                    + " job(s) left after the drain");
        }
        startupMillis.add(Num.round(d.startupMillis()));
        int n = c.drainItems();
        return new Drained(n / d.seconds(), (double) spent.statements() / n, spent.serverCpuMs() / n,
                spent.walBytes() / n);
    }

    /**
     * Each part of a repetition runs both systems on fresh schemas of their own: the server may run without autovacuum
     * (a bench server often does), and the dead rows one drain leaves behind would slow whichever system drains in
     * that schema next, more so with every repetition. The names stay short: graphile-worker names its prepared
     * statements after its schema, and PostgreSQL cuts names at 63 bytes.
     */
    private static String runName(int rep, String part) {
        return NAME + rep + "_" + part;
    }

    private static GraphileWorkerPeer graphile(BenchContext ctx, String run) throws java.io.IOException {
        return GraphileWorkerPeer.start(ctx.url(), ctx.schema(run + "_g", Mode.LONG));
    }

    private static void exactlyOnce(GraphileWorkerPeer.Drain d, int items, Part part, String what) {
        if (d.missing() > 0 || d.twice() > 0 || d.foreign() > 0 || d.completed() != items) {
            throw new AssertionError("peers " + part.key + " graphile-worker " + what + ": not exactly once: "
                    + d.missing() + " job(s) never run, " + d.twice() + " run more than once, " + d.foreign()
                    + " of another drain, " + d.completed() + " completions written for " + items + " jobs");
        }
    }

    private static List<Long> graphileWake(GraphileWorkerPeer graphile, WakeSeries series, Counts c, long base) {
        int jobs = series.jobs(c);
        int warmUp = series.warmUp(c);
        GraphileWorkerPeer.Wake w = graphile.wake(jobs, warmUp, base, series.minGapMs, series.maxGapMs,
                QUICK_CALL.plusMillis((long) (jobs + warmUp) * (series.maxGapMs + 200)));
        if (w.latencyNanos().size() != jobs || w.left() > 0) {
            throw new AssertionError("peers " + series.key + " graphile-worker: " + w.latencyNanos().size()
                    + " samples for " + jobs + " jobs, " + w.left() + " job(s) left");
        }
        return w.latencyNanos();
    }

}
