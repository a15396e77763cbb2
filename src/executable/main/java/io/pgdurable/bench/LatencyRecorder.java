package io.pgdurable.bench;

import java.util.Arrays;

/**
 * Collects latency samples (thread-safe) and summarises them: count, min, median, p90, p99, max, mean, with
 * nearest-rank percentiles. Samples may be negative (a fetch that returned before the enqueue call that fed it);
 * they are kept as measured.
 */
final class LatencyRecorder {
    private long[] nanos = new long[256];
    private int size;

    synchronized void recordNanos(long value) {
        if (size == nanos.length) {
            nanos = Arrays.copyOf(nanos, size * 2);
        }
        nanos[size++] = value;
    }

    void recordMicros(long micros) {
        recordNanos(micros * 1_000L);
    }

    synchronized int count() {
        return size;
    }

    /** The samples in nanoseconds, in the order they were recorded. */
    synchronized long[] nanosInOrder() {
        return Arrays.copyOf(nanos, size);
    }

    /** The samples in milliseconds, ascending. */
    synchronized double[] sortedMillis() {
        long[] copy = Arrays.copyOf(nanos, size);
        Arrays.sort(copy);
        double[] ms = new double[size];
        for (int i = 0; i < size; i++) {
            ms[i] = copy[i] / 1e6;
        }
        return ms;
    }

    LatencySummary summary() {
        return LatencySummary.of(sortedMillis());
    }

    /** The nearest-rank percentile {@code p} (0 < p ≤ 100) of ascending values; NaN when empty. */
    static double percentile(double[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
