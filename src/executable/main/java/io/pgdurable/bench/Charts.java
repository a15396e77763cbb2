package io.pgdurable.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.GraphicsEnvironment;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.AxesChartStyler;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The report's charts, one PNG each, drawn with XChart: idle statements over time and against waiter counts, latency
 * distributions (cumulative curves) of wake, timer, lease, fan-out, throughput cycles and sidecar orchestrations, and
 * bars for throughputs and ratios. Only charts whose scenario ran are drawn.
 */
final class Charts {
    /** Latencies at or below this (including negative ones) are drawn at it on the log axes. */
    static final double FLOOR_MS = 0.01;
    /** What a machine without fonts lacks, as Debian and Ubuntu name it. */
    private static final String FONT_PACKAGES = "libfontconfig1 fonts-dejavu-core";

    private static final int WIDTH = 860;
    /** The height without the legend, which lists its entries one per row below the plot. */
    private static final int PLOT_HEIGHT = 400;
    private static final int LEGEND_ROW = 20;
    private static final Color SHORT_COLOR = new Color(0xd95f02);
    private static final Color LONG_COLOR = new Color(0x1b7f9e);
    private static final Color TARGET_COLOR = new Color(0xc0392b);
    private static final Color TARGET_FILL = new Color(0xf2b8b0);
    private static final Color REFERENCE_COLOR = new Color(0x999999);
    private static final Color TEXT_COLOR = new Color(0x222222);
    private static final Color GRID_COLOR = new Color(0xe3e3e3);
    private static final Font FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 12);
    /** Tick labels: thousands grouped, up to three decimals (0.01, 2.5, 12,000). */
    private static final String NUMBER_PATTERN = "#,##0.###";
    private static final BasicStroke[] LINES = {new BasicStroke(2f), dashed(2f, 7, 4), dashed(2f, 2, 3)};
    private static final BasicStroke REFERENCE_LINE = dashed(1.5f, 6, 4);

    /** One chart: its file name, caption, the scenario it belongs to and the drawing. */
    record Chart(String file, String caption, String scenario, org.knowm.xchart.internal.chartpart.Chart<?, ?> plot) {
        /** The image's height: the plot's and a row per legend entry. */
        int height() {
            return PLOT_HEIGHT + LEGEND_ROW * (int) plot.getSeriesMap().values().stream()
                    .filter(s -> s.isShowInLegend()).count();
        }

        void writePng(OutputStream out) throws IOException {
            int height = height();
            BufferedImage image = new BufferedImage(WIDTH, height, BufferedImage.TYPE_INT_RGB);
            Graphics2D g = image.createGraphics();
            try {
                plot.paint(g, WIDTH, height);
            } finally {
                g.dispose();
            }
            ImageIO.write(image, "png", out);
        }

        void writePng(Path file) throws IOException {
            try (OutputStream out = Files.newOutputStream(file)) {
                writePng(out);
            }
        }
    }

    private Charts() {}

    /**
     * Fails with a message naming the packages to install when Java finds no font to draw text with: the JDK reads
     * fonts through fontconfig, which a JDK unpacked onto a minimal system lacks (Debian's own JDK packages bring it).
     * Charts are drawn off-screen, so no display is needed.
     */
    static void requireFonts() {
        System.setProperty("java.awt.headless", "true");
        String cause;
        try {
            BufferedImage probe = new BufferedImage(1, 1, BufferedImage.TYPE_INT_RGB);
            Graphics2D g = probe.createGraphics();
            try {
                g.setFont(FONT);
                g.getFontMetrics().stringWidth("0");
            } finally {
                g.dispose();
            }
            if (GraphicsEnvironment.getLocalGraphicsEnvironment().getAvailableFontFamilyNames().length > 0) {
                return;
            }
            cause = "no font families";
        } catch (RuntimeException | LinkageError | InternalError e) {
            // the JDK's font manager fails this way without fontconfig's library or any font file
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            cause = root.toString();
        }
        throw new IllegalStateException("cannot draw the report's charts: Java found no fonts (" + cause + "); "
                + "it reads them through fontconfig, so install fontconfig's library and a font, on Debian or "
                + "Ubuntu: apt-get install " + FONT_PACKAGES);
    }

    static List<Chart> render(BenchResult r) {
        List<Chart> out = new ArrayList<>();
        ScenarioResult idle = r.scenario("idle");
        if (idle != null) {
            out.add(timeline("idle-timeline.png", "Idle " + r.unit() + " per second, "
                            + idle.settings().get("waiters") + " waiting dispatchers", "seconds into the counted window",
                    r.unit(), idle, "Idle " + r.unit() + "/s over time (seconds with none drawn at 0.1)"));
            out.add(idleSweep(idle, r.unit()));
        }
        ScenarioResult wake = r.scenario("wake");
        if (wake != null) {
            out.add(cdf("wake-latency.png", "Wake latency: enqueue commit → fetch return", wake,
                    List.of("worker", "orchestrator"), List.of(1.0, 5.0), "target p50 ≤ 1 ms / p99 ≤ 5 ms"));
        }
        ScenarioResult timer = r.scenario("timer");
        if (timer != null) {
            out.add(cdf("timer-lateness.png", "Timer lateness after visible-at", timer, List.of("lateness"),
                    List.of(5.0), "target p99 ≤ 5 ms"));
        }
        ScenarioResult lease = r.scenario("lease");
        if (lease != null) {
            out.add(cdf("lease-reclaim.png", "Reclaim after a crashed lease holder: lease end → fetch return", lease,
                    List.of("reclaim"), List.of(10.0), "target p99 ≤ 10 ms"));
        }
        ScenarioResult wpi = r.scenario("wakes-per-item");
        if (wpi != null) {
            out.add(bars("wakes-per-item.png", "Per claimable item with " + WakesPerItemScenario.WAITERS
                            + " waiting dispatchers", "per item", true, wpi,
                    List.of("wakesPerItem", "statementsPerItem"), List.of("wakes (short: polls)", r.unit()),
                    new double[] {2, Double.NaN}, "target (long polling ≤)"));
        }
        ScenarioResult bq = r.scenario("burst-quiet");
        if (bq != null) {
            out.add(timeline("burst-quiet-timeline.png", r.unit() + " per second after a burst of "
                            + bq.settings().get("items") + " items, " + BurstQuietScenario.CONSUMERS + " dispatchers",
                    "seconds after the window started", r.unit(), bq, r.unit() + "/s after a drained burst (seconds "
                            + "with none drawn at 0.1; lock timeout " + bq.settings().get("lockTimeoutSeconds")
                            + " s)"));
        }
        ScenarioResult tp = r.scenario("throughput");
        if (tp != null) {
            out.add(throughputBars(tp));
            out.add(cdf("throughput-cycle.png", "One client's enqueue → fetch → ack cycle", tp,
                    List.of("single.cycle", "batched.cycle"), List.of(), null));
        }
        ScenarioResult fo = r.scenario("fanout");
        if (fo != null) {
            out.add(bars("fanout.png", "Fan-out/fan-in orchestrations per second", "orchestrations/s", false, fo,
                    List.of("10ms.orchestrationsPerSecond", "10ms-ack-then-fetch.orchestrationsPerSecond",
                            "0ms.orchestrationsPerSecond"),
                    List.of("10 ms activities, 2 + 2", "the same, ack then fetch", "0 ms activities, 8 + 8"),
                    new double[] {36, Double.NaN, 150},
                    "target (long polling ≥)"));
            out.add(cdf("fanout-latency.png", "Orchestration latency: start → completing turn acked", fo,
                    List.of("10ms.latency", "10ms-ack-then-fetch.latency", "0ms.latency"), List.of(), null));
        }
        ScenarioResult no = r.scenario("notify-overhead");
        if (no != null) {
            out.add(notifyBars(no));
        }
        ScenarioResult sw = r.scenario("sql-wake");
        if (sw != null) {
            out.add(cdf("sql-wake-latency.png", "Plain-SQL writer: commit → fetch return", sw,
                    List.of("worker", "orchestrator", "workerTriggersDisabled"), List.of(1.0, 5.0),
                    "target p50 ≤ 1 ms / p99 ≤ 5 ms"));
        }
        ScenarioResult sc = r.scenario("sidecar");
        if (sc != null) {
            // No target line: the sidecar has no throughput target.
            out.add(bars("sidecar.png", "Orchestrations per second through the Durable Task sidecar",
                    "orchestrations/s", false, sc, List.of("orchestrationsPerSecond"),
                    List.of("fan-out of " + SidecarScenario.FANOUT + ", " + SidecarScenario.IN_FLIGHT + " in flight"),
                    null, null));
            out.add(cdf("sidecar-latency.png", "Sidecar orchestration latency: schedule → completion seen by the "
                    + "client", sc, List.of("orchestration"), List.of(), null));
        }
        return out;
    }

    private static Color color(Mode m) {
        return m == Mode.SHORT ? SHORT_COLOR : LONG_COLOR;
    }

    /** Per-second counts over time, one line per mode, on a log y axis with the idle target. */
    private static Chart timeline(String file, String title, String xLabel, String unit, ScenarioResult s,
                                  String caption) {
        XYChart chart = xy(title, xLabel, unit + "/s", false, true);
        for (Mode m : Mode.values()) {
            List<double[]> pts = new ArrayList<>();
            for (double[] p : s.mode(m).series().getOrDefault("timeline", List.of())) {
                pts.add(new double[] {p[0], Math.max(0.1, p[1])});
            }
            line(chart, m.label(), pts, color(m), LINES[0], pts.size() <= 20);
        }
        horizontal(chart, 2.5, "target ≤ 2.5/s (long)", TARGET_COLOR, true);
        logLabels(chart);
        return new Chart(file, caption, s.name(), chart);
    }

    @SuppressWarnings("unchecked")
    private static Chart idleSweep(ScenarioResult idle, String unit) {
        XYChart chart = xy("Idle " + unit + "/s as waiters grow", "waiting dispatchers", unit + "/s", false, true);
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
            line(chart, m.label(), pts, color(m), LINES[0], true);
        }
        horizontal(chart, 2.5, "target ≤ 2.5/s at 32 (long)", TARGET_COLOR, true);
        logLabels(chart);
        return new Chart("idle-waiters.png", "Idle " + unit + "/s at each waiter count", "idle", chart);
    }

    /** Latency distributions as cumulative curves: colour by mode, line style by latency. */
    private static Chart cdf(String file, String title, ScenarioResult s, List<String> latencies,
                             List<Double> targets, String targetLabel) {
        XYChart chart = xy(title, "milliseconds", "percent of samples at or below", true, false);
        // A little room beyond 0 and 100 %; it also keeps XChart from putting the ticks on the curves' own,
        // equally spaced percentages (which it does when the axis ends are among them) instead of round ones.
        chart.getStyler().setYAxisMin(-2.0).setYAxisMax(102.0);
        for (int i = 0; i < latencies.size(); i++) {
            for (Mode m : Mode.values()) {
                LatencySummary l = s.mode(m).latencies().get(latencies.get(i));
                if (l == null || l.count() == 0) {
                    continue;
                }
                List<double[]> pts = new ArrayList<>();
                for (double[] p : l.cumulative()) {
                    pts.add(new double[] {Math.max(FLOOR_MS, p[0]), p[1]});
                }
                line(chart, seriesName(latencies.get(i)) + ", " + m.key() + " polling", pts, color(m),
                        LINES[i % LINES.length], false);
            }
        }
        for (int i = 0; i < targets.size(); i++) {
            XYSeries t = chart.addSeries(i == 0 ? targetLabel : "target " + i, new double[] {targets.get(i),
                    targets.get(i)}, new double[] {0, 100});
            reference(t, TARGET_COLOR, i == 0);
        }
        decades(chart);
        horizontal(chart, 50, "p50 and p99", REFERENCE_COLOR, true);
        horizontal(chart, 99, "p99", REFERENCE_COLOR, false);
        return new Chart(file, title + " (cumulative distribution; ≤ " + FLOOR_MS + " ms drawn at " + FLOOR_MS
                + " ms)", s.name(), chart);
    }

    /** A latency's name as a legend entry. */
    static String seriesName(String latency) {
        switch (latency) {
            case "10ms.latency": return "10 ms activities, 2 + 2";
            case "10ms-ack-then-fetch.latency": return "the same, ack then fetch";
            case "0ms.latency": return "0 ms activities, 8 + 8";
            case "single.cycle": return "one item";
            case "batched.cycle": return "batch of " + BatchedThroughput.BATCH;
            default: return latency;
        }
    }

    /** Grouped bars, one group per figure and one bar per mode, with an optional target per group. */
    private static Chart bars(String file, String title, String yLabel, boolean log, ScenarioResult s,
                              List<String> figures, List<String> categories, double[] targets, String targetLabel) {
        CategoryChart chart = category(title, yLabel, log);
        for (Mode m : Mode.values()) {
            double[] v = new double[figures.size()];
            for (int i = 0; i < v.length; i++) {
                v[i] = s.mode(m).value(figures.get(i));
            }
            bar(chart, m.label(), categories, v, color(m));
        }
        targets(chart, categories, targets, targetLabel);
        if (log) { // bars stand on the axis's floor: a decade below the smallest, so it stays visible
            double smallest = chart.getSeriesMap().values().stream().flatMap(c -> c.getYData().stream())
                    .filter(v -> v != null && v.doubleValue() > 0).mapToDouble(Number::doubleValue).min().orElse(1);
            chart.getStyler().setYAxisMin(Math.pow(10, Math.floor(Math.log10(smallest / 3))));
        }
        return new Chart(file, title, s.name(), chart);
    }

    private static Chart throughputBars(ScenarioResult s) {
        List<String> categories = List.of("one item at a time", "batches of " + BatchedThroughput.BATCH);
        CategoryChart chart = category("Enqueue → fetch → ack throughput, " + ThroughputScenario.CLIENTS
                + " clients", "items/s", false);
        for (Mode m : Mode.values()) {
            bar(chart, m.label(), categories, new double[] {s.mode(m).value("single.itemsPerSecond"),
                    s.mode(m).value("batched.itemsPerSecond")}, color(m));
        }
        Object raw = s.shortMode().details().get("rawSqlReference");
        if (raw instanceof Map<?, ?> r) {
            bar(chart, "raw-SQL queue (reference)", categories, new double[] {number(r.get("singleItemsPerSecond")),
                    number(r.get("batchedItemsPerSecond"))}, REFERENCE_COLOR);
        }
        targets(chart, categories, new double[] {2200, 11000}, "target (long polling ≥)");
        return new Chart("throughput.png", "Enqueue → fetch → ack throughput, with the raw-SQL reference queue",
                s.name(), chart);
    }

    private static double number(Object o) {
        return o instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    /** Enqueue throughput per arm: one bar per phase of the arm, in run order, and the arm over all its phases. */
    @SuppressWarnings("unchecked")
    private static Chart notifyBars(ScenarioResult s) {
        Object phases = s.longMode().details().get("phases");
        Map<String, List<Double>> byArm = new LinkedHashMap<>();
        List<String> categories = new ArrayList<>();
        for (NotifyOverheadScenario.Arm a : NotifyOverheadScenario.Arm.values()) {
            byArm.put(a.key, new ArrayList<>());
            categories.add(a.label);
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
        Color[] colors = {new Color(0x8da0cb), new Color(0x66c2a5), new Color(0xfc8d62), new Color(0xe78ac3),
                new Color(0xa6d854), new Color(0xffd92f)};
        CategoryChart chart = category("Enqueue throughput by notification path (" + NotifyOverheadScenario.CLIENTS
                + " clients)", "enqueues/s", false);
        chart.getStyler().setXAxisLabelRotation(8); // the arms' long names side by side
        for (int i = 0; i < perArm; i++) {
            double[] v = new double[categories.size()];
            int k = 0;
            for (List<Double> values : byArm.values()) {
                v[k++] = i < values.size() ? values.get(i) : Double.NaN;
            }
            bar(chart, "phase " + (i + 1) + " of the arm", categories, v, colors[i % colors.length]);
        }
        bar(chart, "all phases of the arm", categories, new double[] {s.shortMode().value("enqueuesPerSecond"),
                s.longMode().value("enqueuesPerSecond"),
                s.longMode().value("announcerTriggersDisabled.enqueuesPerSecond")}, LONG_COLOR);
        return new Chart("notify-overhead.png", "Enqueue throughput: no notifications, announcer (triggers skipped "
                + "or disabled)", s.name(), chart);
    }

    // ------------------------------------------------------------------ XChart set-up shared by the charts

    private static XYChart xy(String title, String xLabel, String yLabel, boolean xLog, boolean yLog) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(PLOT_HEIGHT).title(title)
                .xAxisTitle(xLabel + (xLog ? " (log scale)" : "")).yAxisTitle(yLabel + (yLog ? " (log scale)" : ""))
                .build();
        style(chart.getStyler());
        chart.getStyler().setXAxisLogarithmic(xLog).setYAxisLogarithmic(yLog);
        chart.getStyler().setMarkerSize(7);
        return chart;
    }

    private static CategoryChart category(String title, String yLabel, boolean yLog) {
        CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(PLOT_HEIGHT).title(title)
                .yAxisTitle(yLabel + (yLog ? " (log scale)" : "")).build();
        style(chart.getStyler());
        chart.getStyler().setYAxisLogarithmic(yLog);
        chart.getStyler().setLabelsVisible(true).setLabelsFont(FONT.deriveFont(11f))
                .setLabelsFontColorAutomaticEnabled(true);
        chart.getStyler().setPlotGridVerticalLinesVisible(false).setAxisTickLabelsFont(FONT.deriveFont(10.5f));
        return chart;
    }

    private static void style(AxesChartStyler s) {
        s.setChartBackgroundColor(Color.WHITE).setPlotBackgroundColor(Color.WHITE).setPlotBorderVisible(false)
                .setChartFontColor(TEXT_COLOR).setChartTitleFont(FONT.deriveFont(15f))
                .setChartTitleBoxVisible(false).setLegendFont(FONT).setLegendBorderColor(Color.WHITE)
                .setLegendPosition(Styler.LegendPosition.OutsideS).setLegendLayout(Styler.LegendLayout.Vertical)
                .setDecimalPattern(NUMBER_PATTERN);
        s.setAxisTitleFont(FONT).setAxisTickLabelsFont(FONT.deriveFont(11f)).setPlotGridLinesColor(GRID_COLOR)
                .setPlotGridLinesStroke(new BasicStroke(1f)).setAxisTickMarksColor(REFERENCE_COLOR)
                .setXAxisDecimalPattern(NUMBER_PATTERN).setYAxisDecimalPattern(NUMBER_PATTERN);
    }

    /** A curve, left out when it has no points. */
    private static void line(XYChart chart, String name, List<double[]> pts, Color color, BasicStroke stroke,
                             boolean markers) {
        if (pts.isEmpty()) {
            return;
        }
        double[] x = new double[pts.size()];
        double[] y = new double[pts.size()];
        for (int i = 0; i < x.length; i++) {
            x[i] = pts.get(i)[0];
            y[i] = pts.get(i)[1];
        }
        XYSeries s = chart.addSeries(name, x, y);
        s.setLineColor(color);
        s.setLineStyle(stroke);
        s.setMarker(markers ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
        s.setMarkerColor(color);
    }

    /**
     * The log x axis over whole decades around the curves drawn so far, so that both ends are labelled; the values
     * between decades are labelled too when the axis spans one (over more their labels run into each other).
     */
    private static void decades(XYChart chart) {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (XYSeries s : chart.getSeriesMap().values()) {
            lo = Math.min(lo, s.getXMin());
            hi = Math.max(hi, s.getXMax());
        }
        if (lo > hi) {
            return; // nothing drawn: XChart's default range
        }
        lo = Math.pow(10, Math.floor(Math.log10(lo)));
        hi = Math.max(lo * 10, Math.pow(10, Math.ceil(Math.log10(hi))));
        chart.getStyler().setXAxisMin(lo).setXAxisMax(hi).setXAxisLogarithmicDecadeOnly(hi / lo > 10);
    }

    /** On a log y axis, the values between decades are labelled too when the curves span at most one. */
    private static void logLabels(XYChart chart) {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (XYSeries s : chart.getSeriesMap().values()) {
            lo = Math.min(lo, s.getYMin());
            hi = Math.max(hi, s.getYMax());
        }
        chart.getStyler().setYAxisLogarithmicDecadeOnly(!(hi / lo <= 10));
    }

    /** A dashed line at {@code y} across the x axis's range or, where XChart sets the range, the curves'. */
    private static void horizontal(XYChart chart, double y, String name, Color color, boolean inLegend) {
        Double lo = chart.getStyler().getXAxisMin();
        Double hi = chart.getStyler().getXAxisMax();
        if (lo == null || hi == null) {
            lo = Double.POSITIVE_INFINITY;
            hi = Double.NEGATIVE_INFINITY;
            for (XYSeries s : chart.getSeriesMap().values()) {
                lo = Math.min(lo, s.getXMin());
                hi = Math.max(hi, s.getXMax());
            }
        }
        if (lo > hi) { // nothing drawn: a line over the axis's default range
            lo = chart.getStyler().isXAxisLogarithmic() ? 1.0 : 0.0;
            hi = 10.0;
        }
        reference(chart.addSeries(name, new double[] {lo, hi}, new double[] {y, y}), color, inLegend);
    }

    private static void reference(XYSeries s, Color color, boolean inLegend) {
        s.setLineColor(color);
        s.setLineStyle(REFERENCE_LINE);
        s.setMarker(SeriesMarkers.NONE);
        s.setShowInLegend(inLegend);
    }

    /** One bar per category; a missing figure (NaN), or one not above zero on a log axis, draws no bar. */
    private static void bar(CategoryChart chart, String name, List<String> categories, double[] values,
                            Color color) {
        boolean log = chart.getStyler().isYAxisLogarithmic();
        List<Double> v = new ArrayList<>();
        for (double d : values) {
            v.add(Double.isNaN(d) || log && d <= 0 ? null : d);
        }
        CategorySeries s = chart.addSeries(name, categories, v);
        s.setFillColor(color);
    }

    /** A target per category (NaN for none), drawn as a pale bar of its own beside the measured ones. */
    private static void targets(CategoryChart chart, List<String> categories, double[] targets, String label) {
        if (targets != null) {
            bar(chart, label, categories, targets, TARGET_FILL);
        }
    }

    private static BasicStroke dashed(float width, float on, float off) {
        return new BasicStroke(width, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {on, off}, 0f);
    }
}
