package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A scenario that runs the same measurement once per mode, short polling first, each on a schema of its own, one
 * after the other in the same run (so they never compete for the machine).
 */
abstract class PairedScenario implements Scenario {
    protected final List<String> notes = new ArrayList<>();

    /** What the scenario measures and how, for the report. */
    abstract String description();

    /** What was run with this profile (counts, durations), for the report and JSON. */
    abstract Map<String, Object> settings(Profile profile);

    abstract ModeResult runMode(Mode mode, BenchContext ctx) throws Exception;

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        long start = System.nanoTime();
        Map<String, ModeResult> results = new LinkedHashMap<>();
        for (Mode mode : Mode.values()) {
            ctx.progress().line("%s: %s ...", name(), mode.label());
            ModeResult r = runMode(mode, ctx);
            ctx.progress().line("%s: %s done: %s", name(), mode.key(), headline(r));
            results.put(mode.key(), r);
        }
        return new ScenarioResult(name(), title(), description(), settings(ctx.profile()),
                results.get(Mode.SHORT.key()), results.get(Mode.LONG.key()), List.copyOf(notes),
                (System.nanoTime() - start) / 1e9);
    }

    /** A one-line summary of a mode's main figures for the progress output. */
    static String headline(ModeResult r) {
        StringBuilder sb = new StringBuilder();
        r.metrics().forEach((k, m) -> {
            if (sb.length() < 160) {
                sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ').append(Num.text(m.value())).append(' ')
                        .append(m.unit());
            }
        });
        r.latencies().forEach((k, s) -> {
            if (sb.length() < 240) {
                sb.append(sb.length() == 0 ? "" : ", ").append(k).append(" p50 ").append(Num.text(s.p50Ms()))
                        .append(" ms p99 ").append(Num.text(s.p99Ms())).append(" ms");
            }
        });
        return sb.toString();
    }
}
