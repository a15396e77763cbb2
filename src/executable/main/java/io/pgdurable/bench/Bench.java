package io.pgdurable.bench;

import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * Runs the benchmark: every selected scenario, short polling and long polling side by side on the same database,
 * with progress on {@code out}; then judges the targets. A scenario that fails is recorded (its targets become
 * "not measured") and the run goes on. The schemas it creates are dropped at the end.
 */
public final class Bench {
    /** Every scenario, in run order. */
    public static final List<String> SCENARIOS = List.of("idle", "wake", "timer", "lease", "wakes-per-item",
            "burst-quiet", "throughput", "drain", "fanout", "notify-overhead", "notify-lock", "sql-wake", "sidecar",
            "metrics-overhead", "peers", "listeners");

    /**
     * What to run.
     *
     * @param quick     a few seconds per scenario (tests), instead of the default profile
     * @param scenarios the scenarios to run, in {@link #SCENARIOS} order (empty = all)
     * @param database  how to show the database in the report (redacted URL)
     * @param embedded  whether the database is the throw-away embedded server
     * @param command   the command line, for the report
     */
    public record Options(boolean quick, List<String> scenarios, String database, boolean embedded, String command) {}

    private final String url;
    private final Options options;
    private final PrintWriter out;

    public Bench(String url, Options options, PrintWriter out) {
        this.url = url;
        this.options = options;
        this.out = out;
    }

    /** Rejects unknown scenario names; returns the selection in run order. */
    public static List<String> select(List<String> names) {
        if (names == null || names.isEmpty()) {
            return SCENARIOS;
        }
        for (String n : names) {
            if (!SCENARIOS.contains(n)) {
                throw new IllegalArgumentException("unknown scenario '" + n + "'; known: " + String.join(", ",
                        SCENARIOS));
            }
        }
        return SCENARIOS.stream().filter(names::contains).toList();
    }

    static Scenario scenario(String name) {
        switch (name) {
            case "idle": return new IdleScenario();
            case "wake": return new WakeScenario();
            case "timer": return new TimerScenario();
            case "lease": return new LeaseScenario();
            case "wakes-per-item": return new WakesPerItemScenario();
            case "burst-quiet": return new BurstQuietScenario();
            case "throughput": return new ThroughputScenario();
            case "drain": return new DrainScenario();
            case "fanout": return new FanoutScenario();
            case "notify-overhead": return new NotifyOverheadScenario();
            case "notify-lock": return new NotifyLockScenario();
            case "sql-wake": return new SqlWakeScenario();
            case "sidecar": return new SidecarScenario();
            case "metrics-overhead": return new MetricsOverheadScenario();
            case "peers": return new PeersScenario();
            case "listeners": return new ListenersScenario();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    public BenchResult run() throws Exception {
        Instant startedAt = Instant.now();
        Profile profile = options.quick() ? Profile.QUICK : Profile.DEFAULT;
        Progress progress = new Progress(out);
        List<String> selected = select(options.scenarios());
        Map<String, Object> machine = MachineInfo.describe();
        Map<String, Object> server = ServerInfo.describe(url);
        progress.line("pgdurable bench (%s profile): %s; %s cores, %s; %s", profile.name(), options.database(),
                machine.get("cores"), machine.get("jvm"), server.get("version"));
        if (machine.get("loadAverage") instanceof Number load
                && load.doubleValue() > ((Number) machine.get("cores")).intValue() * 0.75) {
            progress.line("note: the machine is busy (load average %s on %s cores): other work competes with the "
                    + "benchmark", Num.text(load.doubleValue()), machine.get("cores"));
        }
        if (((Number) server.get("otherSessionsAtStart")).longValue() > 0) {
            progress.line("note: %s other session(s) are connected to this database; their statements count too",
                    server.get("otherSessionsAtStart"));
        }
        Map<String, ScenarioResult> results = new LinkedHashMap<>();
        Map<String, String> failures = new LinkedHashMap<>();
        Map<String, double[]> load = new LinkedHashMap<>();
        Map<String, Object> counterInfo;
        String runId = UUID.randomUUID().toString().replace("-", "").substring(0, 8);
        try (ServerStatementCounter counter = ServerStatementCounter.open(url)) {
            counterInfo = counter.describe();
            progress.line("counting %s on the server with %s%s", counter.source().unit(), counter.source().view(),
                    counter.fallbackReason() == null ? "" : " (" + counter.fallbackReason() + ")");
            BenchContext ctx = new BenchContext(url, profile, progress, counter, runId);
            counterInfo.put("unitCosts", ctx.costs().describe());
            if (ctx.costs().unavailable() != null) {
                progress.line("note: the server's CPU per unit is not measured: %s", ctx.costs().unavailable());
            }
            try {
                for (String name : selected) {
                    Scenario s = scenario(name);
                    progress.line("== %s: %s", name, s.title());
                    double loadBefore = MachineInfo.loadAverage();
                    long checkpointsBefore = counter.checkpoints();
                    try {
                        results.put(name, s.run(ctx));
                        long checkpointsAfter = counter.checkpoints();
                        load.put(name, new double[] {loadBefore, MachineInfo.loadAverage(),
                                checkpointsBefore < 0 || checkpointsAfter < 0 ? Double.NaN
                                        : checkpointsAfter - checkpointsBefore});
                    } catch (Exception | AssertionError e) {
                        String message = e.getClass().getSimpleName() + ": " + e.getMessage();
                        failures.put(name, message);
                        progress.line("%s FAILED: %s", name, message);
                    }
                }
            } finally {
                ctx.closeWaits();
                List<String> left = ctx.dropSchemas();
                if (!left.isEmpty()) {
                    progress.line("warning: could not drop schemas %s", left);
                }
            }
        }
        List<TargetResult> targets = Targets.judge(Targets.all(
                String.valueOf(counterInfo.get("unit"))), results);
        for (Map.Entry<String, String> f : failures.entrySet()) {
            for (int i = 0; i < targets.size(); i++) {
                TargetResult t = targets.get(i);
                if (t.target().scenario().equals(f.getKey())) {
                    targets.set(i, new TargetResult(t.target(), TargetResult.Status.NOT_MEASURED, Double.NaN,
                            Double.NaN, "scenario failed: " + f.getValue()));
                }
            }
        }
        double seconds = progress.elapsedSeconds();
        machine.put("loadAverageAtEnd", Num.round(MachineInfo.loadAverage()));
        BenchResult result = new BenchResult(startedAt, seconds, profile, options, machine, server, counterInfo,
                new ArrayList<>(results.values()), failures, targets, load);
        progress.line("done in %.0f s: %s", seconds, result.summary());
        for (TargetResult t : targets) {
            out.println(String.format(Locale.ROOT, "  %-13s %-24s %s", t.status().name().toLowerCase(Locale.ROOT)
                    .replace('_', ' '), t.target().id(), t.status() == TargetResult.Status.NOT_MEASURED
                    ? t.reason() : Num.text(t.measured()) + " " + t.target().unit() + " (" + t.target().comparison()
                    + "): " + t.distance()));
        }
        out.flush();
        return result;
    }
}
