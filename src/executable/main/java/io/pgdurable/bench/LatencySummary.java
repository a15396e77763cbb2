package io.pgdurable.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A latency distribution in milliseconds, with the ascending samples kept for charts.
 *
 * @param sortedMs every sample, ascending (not written to JSON in full)
 */
record LatencySummary(int count, double minMs, double p50Ms, double p90Ms, double p99Ms, double maxMs,
                      double meanMs, double[] sortedMs) {

    static LatencySummary of(double[] sorted) {
        double sum = 0;
        for (double v : sorted) {
            sum += v;
        }
        int n = sorted.length;
        return new LatencySummary(n, n == 0 ? Double.NaN : sorted[0], LatencyRecorder.percentile(sorted, 50),
                LatencyRecorder.percentile(sorted, 90), LatencyRecorder.percentile(sorted, 99),
                n == 0 ? Double.NaN : sorted[n - 1], n == 0 ? Double.NaN : sum / n, sorted);
    }

    /** A field by its JSON name ({@code p50}, {@code p99}, ...), or NaN for an unknown one. */
    double field(String name) {
        switch (name) {
            case "count": return count;
            case "min": return minMs;
            case "p50": return p50Ms;
            case "p90": return p90Ms;
            case "p99": return p99Ms;
            case "max": return maxMs;
            case "mean": return meanMs;
            default: return Double.NaN;
        }
    }

    Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("unit", "ms");
        m.put("count", count);
        m.put("min", Num.round(minMs));
        m.put("p50", Num.round(p50Ms));
        m.put("p90", Num.round(p90Ms));
        m.put("p99", Num.round(p99Ms));
        m.put("max", Num.round(maxMs));
        m.put("mean", Num.round(meanMs));
        return m;
    }
}
