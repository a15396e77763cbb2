package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.AbstractHistogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * A latency distribution in milliseconds, read from a {@link LatencyRecorder}'s histograms: count, min, nearest-rank
 * percentiles, max, mean, and the cumulative curve the charts draw. As in HdrHistogram's own summaries, a percentile
 * or the max is the upper end of the histogram bucket holding the sample, the min the lower end of its bucket.
 */
final class LatencySummary {
    /** Every non-empty bucket, ascending: its upper end in milliseconds and how many samples it holds. */
    private final double[] bucketMs;
    private final long[] bucketCounts;
    private final long count;
    private final double minMs;
    private final double meanMs;

    private LatencySummary(double[] bucketMs, long[] bucketCounts, double minMs, double meanMs) {
        this.bucketMs = bucketMs;
        this.bucketCounts = bucketCounts;
        long n = 0;
        for (long c : bucketCounts) {
            n += c;
        }
        this.count = n;
        this.minMs = minMs;
        this.meanMs = meanMs;
    }

    /** The distribution of the samples in {@code atOrAboveZero} and the negated ones in {@code belowZero} (ns). */
    static LatencySummary of(AbstractHistogram atOrAboveZero, AbstractHistogram belowZero) {
        List<long[]> negative = buckets(belowZero);
        List<long[]> positive = buckets(atOrAboveZero);
        double[] ms = new double[negative.size() + positive.size()];
        long[] counts = new long[ms.length];
        int i = 0;
        // magnitudes ascending are values descending; a value's upper end is its magnitude's lower end
        for (int k = negative.size() - 1; k >= 0; k--, i++) {
            ms[i] = -belowZero.lowestEquivalentValue(negative.get(k)[0]) / 1e6;
            counts[i] = negative.get(k)[1];
        }
        for (long[] b : positive) {
            ms[i] = b[0] / 1e6;
            counts[i++] = b[1];
        }
        long below = belowZero.getTotalCount();
        long above = atOrAboveZero.getTotalCount();
        double min = below > 0 ? -belowZero.getMaxValue() / 1e6
                : above > 0 ? atOrAboveZero.getMinValue() / 1e6 : Double.NaN;
        double mean = below + above == 0 ? Double.NaN
                : (atOrAboveZero.getMean() * above - belowZero.getMean() * below) / (below + above) / 1e6;
        return new LatencySummary(ms, counts, min, mean);
    }

    /** A histogram's non-empty buckets, ascending: {upper end, count}. */
    private static List<long[]> buckets(AbstractHistogram h) {
        List<long[]> out = new ArrayList<>();
        for (HistogramIterationValue v : h.recordedValues()) {
            out.add(new long[] {v.getValueIteratedTo(), v.getCountAtValueIteratedTo()});
        }
        return out;
    }

    long count() {
        return count;
    }

    double minMs() {
        return minMs;
    }

    double p50Ms() {
        return percentileMs(50);
    }

    double p90Ms() {
        return percentileMs(90);
    }

    double p99Ms() {
        return percentileMs(99);
    }

    double maxMs() {
        return count == 0 ? Double.NaN : bucketMs[bucketMs.length - 1];
    }

    double meanMs() {
        return meanMs;
    }

    /** The nearest-rank percentile {@code p} (0 < p ≤ 100); NaN when there are no samples. */
    double percentileMs(double p) {
        if (count == 0) {
            return Double.NaN;
        }
        long rank = (long) Math.ceil(p / 100.0 * count);
        return atRank(Math.max(1, Math.min(count, rank)));
    }

    /** The {@code rank}-th smallest sample (1-based). */
    private double atRank(long rank) {
        long seen = 0;
        for (int i = 0; i < bucketMs.length; i++) {
            seen += bucketCounts[i];
            if (seen >= rank) {
                return bucketMs[i];
            }
        }
        return bucketMs[bucketMs.length - 1];
    }

    /**
     * The cumulative curve: points (milliseconds, percent of samples at or below). With more than 500 samples, about
     * 400 points up to the 99th percentile and up to 100 in the slowest 1 %, where a chart's reader looks closest.
     */
    List<double[]> cumulative() {
        List<double[]> pts = new ArrayList<>();
        if (count == 0) {
            return pts;
        }
        List<Long> ranks = new ArrayList<>();
        if (count <= 500) {
            for (long r = 1; r <= count; r++) {
                ranks.add(r);
            }
        } else {
            long tail = (long) Math.floor(count * 0.99);
            for (int k = 0; k < 400; k++) {
                ranks.add(k * tail / 400 + 1);
            }
            long step = Math.max(1, (count - tail) / 100);
            for (long r = tail + 1; r <= count; r += step) {
                ranks.add(r);
            }
            ranks.add(count);
        }
        for (long r : ranks) {
            pts.add(new double[] {atRank(r), 100.0 * r / count});
        }
        return pts;
    }

    /** A field by its JSON name ({@code p50}, {@code p99}, ...), or NaN for an unknown one. */
    double field(String name) {
        switch (name) {
            case "count": return count;
            case "min": return minMs;
            case "p50": return p50Ms();
            case "p90": return p90Ms();
            case "p99": return p99Ms();
            case "max": return maxMs();
            case "mean": return meanMs;
            default: return Double.NaN;
        }
    }

    Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("unit", "ms");
        m.put("count", count);
        m.put("min", Num.round(minMs));
        m.put("p50", Num.round(p50Ms()));
        m.put("p90", Num.round(p90Ms()));
        m.put("p99", Num.round(p99Ms()));
        m.put("max", Num.round(maxMs()));
        m.put("mean", Num.round(meanMs));
        return m;
    }
}
