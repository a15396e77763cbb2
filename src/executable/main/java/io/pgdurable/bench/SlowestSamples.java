package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The {@code capacity} slowest samples of a series with what a reader needs to place each one (its index, when it
 * was sent, its parts): a bounded heap, so a series of thousands keeps a handful of entries beside its histogram.
 * Of equal samples the earlier offered is kept. Thread-safe.
 *
 * @param <T> what is kept beside each sample's value
 */
final class SlowestSamples<T> {
    /** A kept sample: its value and what came with it. */
    record Sample<T>(long value, T detail, long order) {}

    /** Slowest first; of equal values the earlier offered first. */
    private static final Comparator<Sample<?>> SLOWEST_FIRST = Comparator.<Sample<?>>comparingLong(Sample::value)
            .reversed().thenComparingLong(Sample::order);

    private final int capacity;
    /** Head: the sample to drop when a slower one comes (the fastest kept, of equal ones the latest). */
    private final PriorityQueue<Sample<T>> kept = new PriorityQueue<>(SLOWEST_FIRST.reversed());
    private long offered;

    SlowestSamples(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, not " + capacity);
        }
        this.capacity = capacity;
    }

    synchronized void offer(long value, T detail) {
        Sample<T> s = new Sample<>(value, detail, offered++);
        if (kept.size() < capacity) {
            kept.add(s);
        } else if (value > kept.peek().value()) {
            kept.poll();
            kept.add(s);
        }
    }

    /** The kept samples, slowest first. */
    synchronized List<Sample<T>> slowestFirst() {
        List<Sample<T>> out = new ArrayList<>(kept);
        out.sort(SLOWEST_FIRST);
        return out;
    }
}
