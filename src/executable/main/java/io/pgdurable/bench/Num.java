package io.pgdurable.bench;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.Arrays;
import java.util.Locale;

/** Number formatting shared by the JSON and Markdown writers, and the median the scenarios report. */
final class Num {
    private Num() {}

    /** The median of {@code values} (the mean of the middle two for an even count); NaN when there are none. */
    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Four significant digits (at least three decimals' precision for small values); null for NaN/infinite. */
    static Object round(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return null;
        }
        if (v == 0) {
            return 0L;
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return (long) v;
        }
        BigDecimal d = new BigDecimal(v).round(new MathContext(Math.abs(v) < 1 ? 3 : 5));
        return d.stripTrailingZeros().doubleValue();
    }

    /** Human form: up to 3 significant decimals, thousands separated for large values. */
    static String text(double v) {
        if (Double.isNaN(v)) {
            return "n/a";
        }
        double a = Math.abs(v);
        if (v == Math.rint(v) && a < 1e15) {
            return String.format(Locale.ROOT, "%,d", (long) v);
        }
        if (a >= 1000) {
            return String.format(Locale.ROOT, "%,.0f", v);
        }
        if (a >= 100) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        if (a >= 10) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        if (a >= 1 || a == 0) {
            return String.format(Locale.ROOT, "%.2f", v);
        }
        if (a >= 0.01) {
            return String.format(Locale.ROOT, "%.3f", v);
        }
        return String.format(Locale.ROOT, "%.2g", v);
    }
}
