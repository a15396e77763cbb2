package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Future wake-up times: delayed visibility and lease ends announced by hints or found by scans. Storage is bounded:
 * only the earliest {@code capacity} are kept, and when any were dropped {@link #overflowed()} tells the owner to
 * scan again once the kept ones have fired. Every deadline offered gets a sequence number, so the owner can tell
 * which ones a database answer started after them supersedes ({@link #mark()}). Not thread-safe: the owner guards
 * it.
 */
final class Deadlines {
    private final int capacity;
    private final long leadMicros;
    private final TreeMap<Key, Hint> byTime = new TreeMap<>();
    private long sequence;
    private boolean overflow;
    /** The highest sequence number among the deadlines dropped for capacity, -1 while none was. */
    private long lastDropped = -1;

    /** {@code atMicros}: when the deadline fires, {@code leadMicros} before the time it stands for. */
    private record Key(long atMicros, long seq) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = Long.compare(atMicros, o.atMicros);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    Deadlines(int capacity) {
        this(capacity, 0);
    }

    /**
     * @param leadMicros how long before its time a deadline fires: a visibility time wakes its fetch early, a lease
     *                   end starts its read-only verification early (the hint keeps its own time either way, and
     *                   whatever acts on it waits for that time before it claims)
     */
    Deadlines(int capacity, long leadMicros) {
        this.capacity = capacity;
        this.leadMicros = leadMicros;
    }

    /** When {@code hint} fires, in microseconds since the epoch. */
    private long firesAt(Hint hint) {
        long at = micros(hint.atMs());
        return at == Long.MIN_VALUE ? at : at - leadMicros;
    }

    private static long micros(long ms) {
        return ms >= Long.MAX_VALUE / 1000 ? Long.MAX_VALUE : ms <= Long.MIN_VALUE / 1000 ? Long.MIN_VALUE : ms * 1000;
    }

    /** Adds a deadline; returns true when it became the earliest (the timer must re-arm). */
    boolean add(Hint hint) {
        long seq = sequence++;
        long at = firesAt(hint);
        if (byTime.size() >= capacity) {
            Map.Entry<Key, Hint> last = byTime.lastEntry();
            overflow = true;
            if (at >= last.getKey().atMicros()) {
                lastDropped = Math.max(lastDropped, seq);
                return false; // later than everything kept: a rescan will find it
            }
            lastDropped = Math.max(lastDropped, byTime.pollLastEntry().getKey().seq());
        }
        byTime.put(new Key(at, seq), hint);
        return byTime.firstKey().atMicros() == at;
    }

    /** The sequence number the next deadline will get: every deadline offered before this call is below it. */
    long mark() {
        return sequence;
    }

    /**
     * Removes the lease ends (count 0) of {@code queue} that were offered before {@code mark} and fall before
     * {@code horizonMs}: a database answer that started after them has told the truth about them. Returns how many.
     */
    int dropLeaseEnds(QueueKind queue, long mark, long horizonMs) {
        int dropped = 0;
        long horizon = micros(horizonMs);
        Iterator<Map.Entry<Key, Hint>> it = byTime.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Key, Hint> e = it.next();
            if (e.getKey().atMicros() >= horizon) {
                break; // keys are at or before their hints' times, so every later one is at the horizon or beyond
            }
            Hint h = e.getValue();
            if (e.getKey().seq() < mark && h.count() == 0 && h.queue() == queue && micros(h.atMs()) < horizon) {
                it.remove();
                dropped++;
            }
        }
        return dropped;
    }

    /**
     * Forgets the overflow when every deadline dropped for capacity was offered before {@code mark}: a complete
     * database answer that started after them has found whatever they stood for.
     */
    void overflowCoveredBy(long mark) {
        if (overflow && lastDropped < mark) {
            overflow = false;
        }
    }

    /** When the earliest deadline fires, in microseconds since the epoch, or {@link Long#MAX_VALUE}. */
    long earliestMicros() {
        return byTime.isEmpty() ? Long.MAX_VALUE : byTime.firstKey().atMicros();
    }

    /** Removes and returns every deadline that fires at or before {@code nowMicros}. */
    List<Hint> dueMicros(long nowMicros) {
        List<Hint> due = new ArrayList<>();
        while (!byTime.isEmpty() && byTime.firstKey().atMicros() <= nowMicros) {
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
