package io.pgdurable.longpoll;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Future wake-up times: delayed visibility and lease ends announced by hints or found by scans. Storage is bounded:
 * only the earliest {@code capacity} are kept, and when any were dropped {@link #overflowed()} tells the owner to
 * scan again once the kept ones have fired. Not thread-safe: the owner guards it.
 */
final class Deadlines {
    private final int capacity;
    private final TreeMap<Key, Hint> byTime = new TreeMap<>();
    private long sequence;
    private boolean overflow;

    private record Key(long atMs, long seq) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = Long.compare(atMs, o.atMs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    Deadlines(int capacity) {
        this.capacity = capacity;
    }

    /** Adds a deadline; returns true when it became the earliest (the timer must re-arm). */
    boolean add(Hint hint) {
        if (byTime.size() >= capacity) {
            Map.Entry<Key, Hint> last = byTime.lastEntry();
            overflow = true;
            if (hint.atMs() >= last.getKey().atMs()) {
                return false; // later than everything kept: a rescan will find it
            }
            byTime.pollLastEntry();
        }
        byTime.put(new Key(hint.atMs(), sequence++), hint);
        return byTime.firstKey().atMs() == hint.atMs();
    }

    /** The earliest deadline, or {@link Long#MAX_VALUE}. */
    long earliest() {
        return byTime.isEmpty() ? Long.MAX_VALUE : byTime.firstKey().atMs();
    }

    /** Removes and returns every deadline at or before {@code nowMs}. */
    List<Hint> due(long nowMs) {
        List<Hint> due = new ArrayList<>();
        while (!byTime.isEmpty() && byTime.firstKey().atMs() <= nowMs) {
            due.add(byTime.pollFirstEntry().getValue());
        }
        return due;
    }

    /** True when deadlines were dropped and none of the kept ones are left: time to scan for the rest. */
    boolean overflowed() {
        return overflow && byTime.isEmpty();
    }

    void clearOverflow() {
        overflow = false;
    }

    int size() {
        return byTime.size();
    }
}
