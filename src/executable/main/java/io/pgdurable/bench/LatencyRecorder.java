package io.pgdurable.bench;

import org.HdrHistogram.Histogram;

/**
 * Collects latency samples (thread-safe) into HdrHistograms of three significant digits (a sample is known to 0.1 %
 * of its value: 1 µs at 1 ms) and summarises them. Samples may be negative (a fetch that returned before the enqueue
 * call that fed it, a claim made ahead of visible-at); a histogram holds no negative values, so their magnitudes go
 * to a second one and the summary puts them back below zero.
 */
final class LatencyRecorder {
    static final int SIGNIFICANT_DIGITS = 3;

    private final Histogram atOrAboveZero = new Histogram(SIGNIFICANT_DIGITS);
    private final Histogram belowZero = new Histogram(SIGNIFICANT_DIGITS);

    synchronized void recordNanos(long value) {
        if (value >= 0) {
            atOrAboveZero.recordValue(value);
        } else {
            belowZero.recordValue(-value);
        }
    }

    void recordMicros(long micros) {
        recordNanos(micros * 1_000L);
    }

    /** Adds every sample of {@code other} (another round of the same measurement). */
    void addAll(LatencyRecorder other) {
        Histogram above;
        Histogram below;
        synchronized (other) {
            above = other.atOrAboveZero.copy();
            below = other.belowZero.copy();
        }
        synchronized (this) {
            atOrAboveZero.add(above);
            belowZero.add(below);
        }
    }

    synchronized LatencySummary summary() {
        return LatencySummary.of(atOrAboveZero, belowZero);
    }
}
