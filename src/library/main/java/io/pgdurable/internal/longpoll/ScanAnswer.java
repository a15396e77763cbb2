package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * How far one timer scan's answer ({@link WorkScanner#scan}) can be trusted. A scan returns what is claimable now
 * (counted up to {@link Hint#SCAN_CAP}) and the earliest {@code limit} future times of each kind; where a kind came
 * back full, later times of that kind may have been cut off. Per queue, the answer is complete below its horizon:
 * every lease end and visibility time earlier than it was returned.
 *
 * <p>A queue's lease ends come from up to two kinds (the worker queue's item leases and session leases), told apart
 * by nothing the caller needs: when their rows together reach {@code limit}, the {@code limit}-th earliest of them
 * is a safe horizon, since a kind that was cut off returned {@code limit} rows no later than its own cut.
 */
final class ScanAnswer {
    private final Map<QueueKind, Long> horizon = new EnumMap<>(QueueKind.class);

    private ScanAnswer() {}

    /** Reads {@code hints}, the answer of a scan at {@code nowMs} with {@code limit}. */
    static ScanAnswer of(long nowMs, int limit, List<Hint> hints) {
        ScanAnswer a = new ScanAnswer();
        for (QueueKind q : QueueKind.values()) {
            List<Long> leaseEnds = new ArrayList<>();
            List<Long> visible = new ArrayList<>();
            for (Hint h : hints) {
                if (h.queue() != q) {
                    continue;
                }
                if (h.atMs() <= nowMs) {
                    continue; // claimable now: nothing cut off
                }
                if (h.count() == 0) {
                    leaseEnds.add(h.atMs());
                } else {
                    visible.add(h.atMs());
                }
            }
            a.horizon.put(q, Math.min(cut(leaseEnds, limit), cut(visible, limit)));
        }
        return a;
    }

    private static long cut(List<Long> times, int limit) {
        if (times.size() < limit) {
            return Long.MAX_VALUE;
        }
        Collections.sort(times);
        return times.get(Math.max(0, limit - 1));
    }

    /**
     * Tracked lease ends of {@code queue} earlier than this were answered for ({@link Long#MAX_VALUE}: all of them).
     * Those at the horizon itself may share their time with a row that was cut off, so only earlier ones count.
     */
    long horizon(QueueKind queue) {
        return horizon.get(queue);
    }

    /** Nothing of any kind was cut off. */
    boolean complete() {
        return horizon.values().stream().allMatch(h -> h == Long.MAX_VALUE);
    }
}
