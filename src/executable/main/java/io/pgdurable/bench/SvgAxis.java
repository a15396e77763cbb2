package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * One chart axis: a linear or logarithmic mapping of a value range onto pixels, with readable ticks (1-2-5 steps
 * for linear, decades, with 2 and 5 when the range is short, for log).
 */
final class SvgAxis {
    private final boolean log;
    private final double min;
    private final double max;
    private final double from;
    private final double to;

    private SvgAxis(boolean log, double min, double max, double from, double to) {
        this.log = log;
        this.min = min;
        this.max = max;
        this.from = from;
        this.to = to;
    }

    /**
     * An axis covering {@code values} (NaN ignored; non-positive ones ignored on a log axis), padded to tick
     * boundaries (plus 6 % {@code headroom} on a linear axis), mapped onto pixels {@code from..to}.
     */
    static SvgAxis of(boolean log, List<Double> values, boolean includeZero, boolean headroom, double from,
                      double to) {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (double v : values) {
            if (Double.isNaN(v) || Double.isInfinite(v) || (log && v <= 0)) {
                continue;
            }
            lo = Math.min(lo, v);
            hi = Math.max(hi, v);
        }
        if (lo == Double.POSITIVE_INFINITY) {
            lo = log ? 1 : 0;
            hi = log ? 10 : 1;
        }
        if (log) {
            lo = Math.pow(10, Math.floor(Math.log10(lo)));
            hi = Math.pow(10, Math.ceil(Math.log10(hi)));
            if (hi <= lo) {
                hi = lo * 10;
            }
        } else {
            if (includeZero) {
                lo = Math.min(0, lo);
                hi = Math.max(0, hi);
            }
            if (hi == lo) {
                hi = lo + 1;
            }
            if (headroom) {
                hi += (hi - lo) * 0.06; // room above the tallest bar or point for its label
            }
            double step = niceStep((hi - lo) / 5);
            lo = Math.floor(lo / step) * step;
            hi = Math.ceil(hi / step) * step;
        }
        return new SvgAxis(log, lo, hi, from, to);
    }

    boolean log() {
        return log;
    }

    double min() {
        return min;
    }

    /** The pixel position of {@code v} (clamped into the axis range). */
    double pixel(double v) {
        double f;
        if (log) {
            double c = Math.max(min, Math.min(max, v <= 0 ? min : v));
            f = (Math.log10(c) - Math.log10(min)) / (Math.log10(max) - Math.log10(min));
        } else {
            double c = Math.max(min, Math.min(max, v));
            f = (c - min) / (max - min);
        }
        return from + f * (to - from);
    }

    List<Double> ticks() {
        List<Double> t = new ArrayList<>();
        if (log) {
            int decades = (int) Math.round(Math.log10(max / min));
            for (double d = min; d <= max * 1.0001; d *= 10) {
                t.add(d);
                if (decades <= 2 && d * 10 <= max * 1.0001) {
                    t.add(d * 2);
                    t.add(d * 5);
                }
            }
        } else {
            double step = niceStep((max - min) / 5);
            for (double v = min; v <= max + step / 1000; v += step) {
                t.add(Math.abs(v) < step / 1e6 ? 0 : v);
            }
        }
        return t;
    }

    static String label(double v) {
        if (v == 0) {
            return "0";
        }
        double a = Math.abs(v);
        if (a >= 1_000_000) {
            return trim(v / 1_000_000) + "M";
        }
        if (a >= 10_000) {
            return trim(v / 1000) + "k";
        }
        return trim(v);
    }

    private static String trim(double v) {
        if (v == Math.rint(v)) {
            return String.valueOf((long) v);
        }
        String s = String.format(java.util.Locale.ROOT, "%.3f", v);
        return s.replaceAll("0+$", "").replaceAll("\\.$", "");
    }

    private static double niceStep(double raw) {
        if (raw <= 0) {
            return 1;
        }
        double mag = Math.pow(10, Math.floor(Math.log10(raw)));
        double n = raw / mag;
        double nice = n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10;
        return nice * mag;
    }
}
