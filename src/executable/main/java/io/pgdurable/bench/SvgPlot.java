package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * An x/y line chart (time series, sweeps, latency distributions as cumulative curves) with optional logarithmic
 * axes, reference lines (targets) and a legend.
 */
final class SvgPlot {
    private static final int W = 760;
    private static final int H = 400;
    private static final int LEFT = 78;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int BOTTOM = 96;

    /** One curve; {@code dash} null for solid. */
    record Series(String name, String color, String dash, List<double[]> points, boolean markers) {}

    /** A dashed line at {@code value} on the x axis ({@code vertical}) or the y axis. */
    record Reference(double value, boolean vertical, String label, String color) {}

    private final String title;
    private final String xLabel;
    private final String yLabel;
    private final boolean xLog;
    private final boolean yLog;
    private final List<Series> series = new ArrayList<>();
    private final List<Reference> references = new ArrayList<>();
    private Double yMin;
    private Double yMax;

    SvgPlot(String title, String xLabel, String yLabel, boolean xLog, boolean yLog) {
        this.title = title;
        this.xLabel = xLabel;
        this.yLabel = yLabel;
        this.xLog = xLog;
        this.yLog = yLog;
    }

    SvgPlot add(Series s) {
        series.add(s);
        return this;
    }

    SvgPlot reference(Reference r) {
        references.add(r);
        return this;
    }

    /** Fixes the y range (e.g. 0..100 for percentiles). */
    SvgPlot yRange(double min, double max) {
        this.yMin = min;
        this.yMax = max;
        return this;
    }

    String render() {
        List<Double> xs = new ArrayList<>();
        List<Double> ys = new ArrayList<>();
        for (Series s : series) {
            for (double[] p : s.points()) {
                xs.add(p[0]);
                ys.add(p[1]);
            }
        }
        for (Reference r : references) {
            (r.vertical() ? xs : ys).add(r.value());
        }
        if (yMin != null) {
            ys.add(yMin);
            ys.add(yMax);
        }
        SvgAxis x = SvgAxis.of(xLog, xs, false, false, LEFT, W - RIGHT);
        SvgAxis y = SvgAxis.of(yLog, ys, !yLog, yMin == null, H - BOTTOM, TOP);
        Svg svg = new Svg(W, H);
        svg.text(W / 2.0, 22, title, 15, "middle", "#222", false);
        for (double t : x.ticks()) {
            double px = x.pixel(t);
            svg.line(px, TOP, px, H - BOTTOM, Svg.GRID, 1, null);
            svg.text(px, H - BOTTOM + 16, SvgAxis.label(t), 11, "middle", "#444", false);
        }
        for (double t : y.ticks()) {
            double py = y.pixel(t);
            svg.line(LEFT, py, W - RIGHT, py, Svg.GRID, 1, null);
            svg.text(LEFT - 6, py + 4, SvgAxis.label(t), 11, "end", "#444", false);
        }
        svg.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, "#888", 1, null);
        svg.line(LEFT, TOP, LEFT, H - BOTTOM, "#888", 1, null);
        svg.text((LEFT + W - RIGHT) / 2.0, H - BOTTOM + 36, xLabel + (xLog ? " (log scale)" : ""), 12, "middle",
                "#222", false);
        svg.text(18, (TOP + H - BOTTOM) / 2.0, yLabel + (yLog ? " (log scale)" : ""), 12, "middle", "#222", true);
        for (Reference r : references) {
            if (r.vertical()) {
                double px = x.pixel(r.value());
                svg.line(px, TOP, px, H - BOTTOM, r.color(), 1.5, "6,4");
                svg.text(px + 4, TOP + 12, r.label(), 11, "start", r.color(), false);
            } else {
                double py = y.pixel(r.value());
                svg.line(LEFT, py, W - RIGHT, py, r.color(), 1.5, "6,4");
                svg.text(W - RIGHT - 4, py - 5, r.label(), 11, "end", r.color(), false);
            }
        }
        for (Series s : series) {
            double[][] pts = new double[s.points().size()][];
            for (int i = 0; i < pts.length; i++) {
                double[] p = s.points().get(i);
                pts[i] = new double[] {x.pixel(p[0]), y.pixel(p[1])};
            }
            svg.polyline(pts, s.color(), 2, s.dash());
            if (s.markers()) {
                for (double[] p : pts) {
                    svg.circle(p[0], p[1], 3.5, s.color());
                }
            }
        }
        legend(svg, series);
        return svg.end();
    }

    private static void legend(Svg svg, List<Series> series) {
        double lx = LEFT;
        double ly = H - 28;
        for (Series s : series) {
            svg.line(lx, ly - 4, lx + 24, ly - 4, s.color(), 2.5, s.dash());
            svg.text(lx + 30, ly, s.name(), 12, "start", "#222", false);
            lx += 40 + s.name().length() * 6.6;
            if (lx > W - 160) {
                lx = LEFT;
                ly += 18;
            }
        }
    }

    /**
     * A latency distribution as a cumulative curve: x = latency (ms), y = percent of samples at or below it. Large
     * sample sets are thinned to about 400 points, keeping the slowest 1 % in full (up to 100 points).
     */
    static List<double[]> cdf(double[] sortedMs, double floor) {
        List<double[]> pts = new ArrayList<>();
        int n = sortedMs.length;
        if (n == 0) {
            return pts;
        }
        if (n <= 500) {
            for (int i = 0; i < n; i++) {
                pts.add(new double[] {Math.max(floor, sortedMs[i]), 100.0 * (i + 1) / n});
            }
            return pts;
        }
        int tail = (int) Math.floor(n * 0.99);
        for (int k = 0; k < 400; k++) {
            int i = (int) ((long) k * tail / 400);
            pts.add(new double[] {Math.max(floor, sortedMs[i]), 100.0 * (i + 1) / n});
        }
        int step = Math.max(1, (n - tail) / 100);
        for (int i = tail; i < n; i += step) {
            pts.add(new double[] {Math.max(floor, sortedMs[i]), 100.0 * (i + 1) / n});
        }
        pts.add(new double[] {Math.max(floor, sortedMs[n - 1]), 100.0});
        return pts;
    }
}
