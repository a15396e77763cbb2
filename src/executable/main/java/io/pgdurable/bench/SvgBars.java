package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * A grouped bar chart: one group per category, one bar per series, values printed on the bars, an optional target
 * marker per category, optional log scale.
 */
final class SvgBars {
    private static final int W = 760;
    private static final int H = 400;
    private static final int LEFT = 78;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int BOTTOM = 96;

    record Bar(String series, String color, double[] values) {}

    private final String title;
    private final String yLabel;
    private final boolean yLog;
    private final List<String> categories;
    private final List<Bar> bars = new ArrayList<>();
    private double[] targets;
    private String targetLabel;

    SvgBars(String title, String yLabel, boolean yLog, List<String> categories) {
        this.title = title;
        this.yLabel = yLabel;
        this.yLog = yLog;
        this.categories = categories;
    }

    SvgBars add(Bar bar) {
        bars.add(bar);
        return this;
    }

    /** One target per category (NaN for none), drawn as a dashed marker across the group. */
    SvgBars targets(double[] values, String label) {
        this.targets = values;
        this.targetLabel = label;
        return this;
    }

    String render() {
        List<Double> ys = new ArrayList<>();
        for (Bar b : bars) {
            for (double v : b.values()) {
                ys.add(v);
            }
        }
        if (targets != null) {
            for (double t : targets) {
                ys.add(t);
            }
        }
        if (yLog) { // a decade of room below the smallest bar, so it stays visible
            ys.stream().filter(v -> v > 0 && !Double.isNaN(v)).min(Double::compare).ifPresent(m -> ys.add(m / 3));
        }
        SvgAxis y = SvgAxis.of(yLog, ys, !yLog, true, H - BOTTOM, TOP);
        Svg svg = new Svg(W, H);
        svg.text(W / 2.0, 22, title, 15, "middle", "#222", false);
        for (double t : y.ticks()) {
            double py = y.pixel(t);
            svg.line(LEFT, py, W - RIGHT, py, Svg.GRID, 1, null);
            svg.text(LEFT - 6, py + 4, SvgAxis.label(t), 11, "end", "#444", false);
        }
        svg.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, "#888", 1, null);
        svg.line(LEFT, TOP, LEFT, H - BOTTOM, "#888", 1, null);
        svg.text(18, (TOP + H - BOTTOM) / 2.0, yLabel + (yLog ? " (log scale)" : ""), 12, "middle", "#222", true);
        double group = (W - LEFT - RIGHT) / (double) categories.size();
        double barWidth = Math.min(70, group * 0.7 / Math.max(1, bars.size()));
        double base = y.pixel(yLog ? y.min() : 0);
        for (int c = 0; c < categories.size(); c++) {
            double gx = LEFT + c * group + group / 2;
            double start = gx - barWidth * bars.size() / 2;
            for (int b = 0; b < bars.size(); b++) {
                double v = bars.get(b).values()[c];
                if (Double.isNaN(v)) {
                    svg.text(start + barWidth * (b + 0.5), base - 6, "n/a", 11, "middle", "#888", false);
                    continue;
                }
                double top = y.pixel(v);
                svg.rect(start + barWidth * b + 2, top, barWidth - 4, base - top, bars.get(b).color());
                svg.text(start + barWidth * (b + 0.5), top - 5, Num.text(v), 11, "middle", "#222", false);
            }
            if (targets != null && !Double.isNaN(targets[c])) {
                double ty = y.pixel(targets[c]);
                svg.line(start - 8, ty, start + barWidth * bars.size() + 8, ty, Svg.TARGET_COLOR, 2, "6,4");
                svg.text(start - 8, ty - 5, targetLabel + " " + Num.text(targets[c]), 11, "start", Svg.TARGET_COLOR,
                        false);
            }
            svg.text(gx, H - BOTTOM + 18, categories.get(c), 12, "middle", "#222", false);
        }
        double lx = LEFT;
        for (Bar b : bars) {
            svg.rect(lx, H - 40, 14, 14, b.color());
            svg.text(lx + 20, H - 28, b.series(), 12, "start", "#222", false);
            lx += 40 + b.series().length() * 6.6;
        }
        return svg.end();
    }
}
