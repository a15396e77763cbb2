package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The report's charts, one SVG each: idle statements over time and against waiter counts, latency distributions
 * (cumulative curves) of wake, timer, lease, fan-out, throughput cycles and sidecar orchestrations, and bars for
 * throughputs and ratios. Only charts whose scenario ran are drawn.
 */
final class Charts {
    /** Latencies at or below this (including negative ones) are drawn at it on the log axes. */
    static final double FLOOR_MS = 0.01;

    /** One chart: its file name, caption and the scenario it belongs to. */
    record Chart(String file, String caption, String scenario, String svg) {}

    private Charts() {}

    static List<Chart> render(BenchResult r) {
        List<Chart> out = new ArrayList<>();
        ScenarioResult idle = r.scenario("idle");
        if (idle != null) {
            out.add(idleTimeline(idle, r.unit()));
            out.add(idleSweep(idle, r.unit()));
        }
        ScenarioResult wake = r.scenario("wake");
        if (wake != null) {
            out.add(cdf("wake-latency.svg", "Wake latency: enqueue commit → fetch return", wake,
                    List.of("worker", "orchestrator"), List.of(1.0, 5.0), "target p50 ≤ 1 ms / p99 ≤ 5 ms"));
        }
        ScenarioResult timer = r.scenario("timer");
        if (timer != null) {
            out.add(cdf("timer-lateness.svg", "Timer lateness after visible-at", timer, List.of("lateness"),
                    List.of(5.0), "target p99 ≤ 5 ms"));
        }
        ScenarioResult lease = r.scenario("lease");
        if (lease != null) {
            out.add(cdf("lease-reclaim.svg", "Reclaim after a crashed lease holder: lease end → fetch return", lease,
                    List.of("reclaim"), List.of(10.0), "target p99 ≤ 10 ms"));
        }
        ScenarioResult wpi = r.scenario("wakes-per-item");
        if (wpi != null) {
            out.add(bars("wakes-per-item.svg", "Per claimable item with " + WakesPerItemScenario.WAITERS
                            + " waiting dispatchers", "per item", true, wpi,
                    List.of("wakesPerItem", "statementsPerItem"), List.of("wakes (short: polls)", r.unit()),
                    new double[] {2, Double.NaN}, "target ≤"));
        }
        ScenarioResult bq = r.scenario("burst-quiet");
        if (bq != null) {
            out.add(burstQuietTimeline(bq, r.unit()));
        }
        ScenarioResult tp = r.scenario("throughput");
        if (tp != null) {
            out.add(throughputBars(tp));
            out.add(cdf("throughput-cycle.svg", "One client's enqueue → fetch → ack cycle", tp,
                    List.of("single.cycle", "batched.cycle"), List.of(), null));
        }
        ScenarioResult fo = r.scenario("fanout");
        if (fo != null) {
            out.add(bars("fanout.svg", "Fan-out/fan-in orchestrations per second", "orchestrations/s", false, fo,
                    List.of("10ms.orchestrationsPerSecond", "0ms.orchestrationsPerSecond"),
                    List.of("10 ms activities, 2 + 2", "0 ms activities, 8 + 8"), new double[] {36, 150},
                    "target ≥"));
            out.add(cdf("fanout-latency.svg", "Orchestration latency: start → completing turn acked", fo,
                    List.of("10ms.latency", "0ms.latency"), List.of(), null));
        }
        ScenarioResult no = r.scenario("notify-overhead");
        if (no != null) {
            out.add(notifyBars(no));
        }
        ScenarioResult sw = r.scenario("sql-wake");
        if (sw != null) {
            out.add(cdf("sql-wake-latency.svg", "Plain-SQL writer: commit → fetch return", sw,
                    List.of("worker", "orchestrator", "workerTriggersDisabled"), List.of(1.0, 5.0),
                    "target p50 ≤ 1 ms / p99 ≤ 5 ms"));
        }
        ScenarioResult sc = r.scenario("sidecar");
        if (sc != null) {
            // No target line: the issue sets no number for the sidecar.
            out.add(bars("sidecar.svg", "Orchestrations per second through the Durable Task sidecar",
                    "orchestrations/s", false, sc, List.of("orchestrationsPerSecond"),
                    List.of("fan-out of " + SidecarScenario.FANOUT + ", " + SidecarScenario.IN_FLIGHT + " in flight"),
                    null, null));
            out.add(cdf("sidecar-latency.svg", "Sidecar orchestration latency: schedule → completion seen by the "
                    + "client", sc, List.of("orchestration"), List.of(), null));
        }
        return out;
    }

    private static Chart idleTimeline(ScenarioResult idle, String unit) {
        SvgPlot plot = new SvgPlot("Idle " + unit + " per second, " + idle.settings().get("waiters")
                + " waiting dispatchers", "seconds into the counted window", unit + "/s", false, true);
        for (Mode m : Mode.values()) {
            List<double[]> pts = new ArrayList<>();
            for (double[] p : idle.mode(m).series().getOrDefault("timeline", List.of())) {
                pts.add(new double[] {p[0], Math.max(0.1, p[1])});
            }
            plot.add(new SvgPlot.Series(m.label(), Svg.color(m), null, pts, pts.size() <= 20));
        }
        plot.reference(new SvgPlot.Reference(2.5, false, "target ≤ 2.5/s (long)", Svg.TARGET_COLOR));
        return new Chart("idle-timeline.svg", "Idle " + unit + "/s over time (seconds with none drawn at 0.1)",
                "idle", plot.render());
    }

    private static Chart burstQuietTimeline(ScenarioResult bq, String unit) {
        SvgPlot plot = new SvgPlot(unit + " per second after a burst of " + bq.settings().get("items")
                + " items, " + BurstQuietScenario.CONSUMERS + " dispatchers", "seconds after the window started",
                unit + "/s", false, true);
        for (Mode m : Mode.values()) {
            List<double[]> pts = new ArrayList<>();
            for (double[] p : bq.mode(m).series().getOrDefault("timeline", List.of())) {
                pts.add(new double[] {p[0], Math.max(0.1, p[1])});
            }
            plot.add(new SvgPlot.Series(m.label(), Svg.color(m), null, pts, pts.size() <= 20));
        }
        plot.reference(new SvgPlot.Reference(2.5, false, "target ≤ 2.5/s (long)", Svg.TARGET_COLOR));
        return new Chart("burst-quiet-timeline.svg", unit + "/s after a drained burst (seconds with none drawn at "
                + "0.1; lock timeout " + bq.settings().get("lockTimeoutSeconds") + " s)", "burst-quiet",
                plot.render());
    }

    @SuppressWarnings("unchecked")
    private static Chart idleSweep(ScenarioResult idle, String unit) {
        SvgPlot plot = new SvgPlot("Idle " + unit + "/s as waiters grow", "waiting dispatchers", unit + "/s",
                false, true);
        for (Mode m : Mode.values()) {
            List<double[]> pts = new ArrayList<>();
            Object sweep = idle.mode(m).details().get("sweep");
            if (sweep instanceof List<?> list) {
                for (Object o : list) {
                    Map<String, Object> point = (Map<String, Object>) o;
                    Object v = point.get("perSecond");
                    pts.add(new double[] {((Number) point.get("waiters")).doubleValue(),
                            Math.max(0.1, v == null ? 0.1 : ((Number) v).doubleValue())});
                }
            }
            plot.add(new SvgPlot.Series(m.label(), Svg.color(m), null, pts, true));
        }
        plot.reference(new SvgPlot.Reference(2.5, false, "target ≤ 2.5/s at 32 (long)", Svg.TARGET_COLOR));
        return new Chart("idle-waiters.svg", "Idle " + unit + "/s at each waiter count", "idle", plot.render());
    }

    private static Chart cdf(String file, String title, ScenarioResult s, List<String> latencies,
                             List<Double> refs, String refLabel) {
        SvgPlot plot = new SvgPlot(title, "milliseconds", "percent of samples at or below", true, false)
                .yRange(0, 100);
        String[] dashes = {null, "7,4", "2,3"};
        for (int i = 0; i < latencies.size(); i++) {
            for (Mode m : Mode.values()) {
                LatencySummary l = s.mode(m).latencies().get(latencies.get(i));
                if (l == null || l.count() == 0) {
                    continue;
                }
                plot.add(new SvgPlot.Series(seriesName(latencies.get(i)) + ", " + m.key() + " polling", Svg.color(m),
                        dashes[i % dashes.length], SvgPlot.cdf(l.sortedMs(), FLOOR_MS), false));
            }
        }
        plot.reference(new SvgPlot.Reference(50, false, "p50", "#999"));
        plot.reference(new SvgPlot.Reference(99, false, "p99", "#999"));
        for (int i = 0; i < refs.size(); i++) {
            plot.reference(new SvgPlot.Reference(refs.get(i), true, i == 0 ? refLabel : "", Svg.TARGET_COLOR));
        }
        return new Chart(file, title + " (cumulative distribution; ≤ " + FLOOR_MS + " ms drawn at " + FLOOR_MS
                + " ms)", s.name(), plot.render());
    }

    /** A latency's name as a legend entry. */
    static String seriesName(String latency) {
        switch (latency) {
            case "10ms.latency": return "10 ms activities, 2 + 2";
            case "0ms.latency": return "0 ms activities, 8 + 8";
            case "single.cycle": return "one item";
            case "batched.cycle": return "batch of " + BatchedThroughput.BATCH;
            default: return latency;
        }
    }

    private static Chart bars(String file, String title, String yLabel, boolean log, ScenarioResult s,
                              List<String> figures, List<String> categories, double[] targets, String targetLabel) {
        SvgBars chart = new SvgBars(title, yLabel, log, categories);
        for (Mode m : Mode.values()) {
            double[] v = new double[figures.size()];
            for (int i = 0; i < v.length; i++) {
                v[i] = s.mode(m).value(figures.get(i));
            }
            chart.add(new SvgBars.Bar(m.label(), Svg.color(m), v));
        }
        chart.targets(targets, targetLabel);
        return new Chart(file, title, s.name(), chart.render());
    }

    @SuppressWarnings("unchecked")
    private static Chart throughputBars(ScenarioResult s) {
        List<String> figures = List.of("single.itemsPerSecond", "batched.itemsPerSecond");
        SvgBars chart = new SvgBars("Enqueue → fetch → ack throughput, " + ThroughputScenario.CLIENTS + " clients",
                "items/s", false, List.of("one item at a time", "batches of " + BatchedThroughput.BATCH));
        for (Mode m : Mode.values()) {
            chart.add(new SvgBars.Bar(m.label(), Svg.color(m), new double[] {s.mode(m).value(figures.get(0)),
                    s.mode(m).value(figures.get(1))}));
        }
        Object raw = s.shortMode().details().get("rawSqlReference");
        if (raw instanceof Map<?, ?> r) {
            chart.add(new SvgBars.Bar("raw-SQL queue (reference)", "#999999", new double[] {
                    number(r.get("singleItemsPerSecond")), number(r.get("batchedItemsPerSecond"))}));
        }
        chart.targets(new double[] {2200, 11000}, "target ≥");
        return new Chart("throughput.svg", "Enqueue → fetch → ack throughput, with the raw-SQL reference queue",
                s.name(), chart.render());
    }

    private static double number(Object o) {
        return o instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    /** Enqueue throughput per arm: one bar per phase of the arm, in run order, and the arm over all its phases. */
    @SuppressWarnings("unchecked")
    private static Chart notifyBars(ScenarioResult s) {
        Object phases = s.longMode().details().get("phases");
        Map<String, List<Double>> byArm = new java.util.LinkedHashMap<>();
        for (NotifyOverheadScenario.Arm a : NotifyOverheadScenario.Arm.values()) {
            byArm.put(a.key, new ArrayList<>());
        }
        if (phases instanceof List<?> list) {
            for (Object o : list) {
                Map<String, Object> p = (Map<String, Object>) o;
                List<Double> values = byArm.get(String.valueOf(p.get("arm")));
                if (values != null) {
                    values.add(((Number) p.get("enqueuesPerSecond")).doubleValue());
                }
            }
        }
        int perArm = byArm.values().stream().mapToInt(List::size).max().orElse(0);
        List<String> categories = new ArrayList<>();
        for (NotifyOverheadScenario.Arm a : NotifyOverheadScenario.Arm.values()) {
            categories.add(a.label);
        }
        String[] colors = {"#8da0cb", "#66c2a5", "#fc8d62", "#e78ac3", "#a6d854", "#ffd92f"};
        SvgBars chart = new SvgBars("Enqueue throughput by notification path (" + NotifyOverheadScenario.CLIENTS
                + " clients)", "enqueues/s", false, categories);
        for (int i = 0; i < perArm; i++) {
            double[] v = new double[categories.size()];
            int k = 0;
            for (List<Double> values : byArm.values()) {
                v[k++] = i < values.size() ? values.get(i) : Double.NaN;
            }
            chart.add(new SvgBars.Bar("phase " + (i + 1) + " of the arm", colors[i % colors.length], v));
        }
        double[] all = new double[categories.size()];
        all[0] = s.shortMode().value("enqueuesPerSecond");
        all[1] = s.longMode().value("enqueuesPerSecond");
        all[2] = s.longMode().value("announcerTriggersDisabled.enqueuesPerSecond");
        chart.add(new SvgBars.Bar("all phases of the arm", Svg.LONG_COLOR, all));
        return new Chart("notify-overhead.svg", "Enqueue throughput: no notifications, announcer (triggers skipped "
                + "or disabled)", s.name(), chart.render());
    }
}
