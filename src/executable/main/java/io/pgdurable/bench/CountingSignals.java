package io.pgdurable.bench;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/** Counts the long-poll machinery's moments (notifications, fallback probes, scans, wakes, reconnects). */
final class CountingSignals implements LongPollSignals {
    private final AtomicLong notifications = new AtomicLong();
    private final AtomicLong fallbackProbes = new AtomicLong();
    private final AtomicLong scans = new AtomicLong();
    private final AtomicLong wakes = new AtomicLong();
    private final AtomicLong reconnects = new AtomicLong();
    private final AtomicLong uselessWakes = new AtomicLong();
    private final Map<WakeSource, AtomicLong> wakesBySource = new java.util.EnumMap<>(WakeSource.class);
    private final Map<QueueKind, AtomicLong> wakesByQueue = new java.util.EnumMap<>(QueueKind.class);
    private final Map<QueueKind, AtomicLong> uselessByQueue = new java.util.EnumMap<>(QueueKind.class);
    private volatile boolean listening;
    /** When deadlines woke fetches, in microseconds since the epoch; null until {@link #traceDeadlineWakes()}. */
    private volatile ConcurrentLinkedQueue<Long> deadlineWakes;

    CountingSignals() {
        for (WakeSource s : WakeSource.values()) {
            wakesBySource.put(s, new AtomicLong());
        }
        for (QueueKind q : QueueKind.values()) {
            wakesByQueue.put(q, new AtomicLong());
            uselessByQueue.put(q, new AtomicLong());
        }
    }

    @Override
    public void listening(boolean reconnect) {
        listening = true;
        if (reconnect) {
            reconnects.incrementAndGet();
        }
    }

    @Override
    public void notification(String payload) {
        notifications.incrementAndGet();
    }

    @Override
    public void scanFinished(boolean timedOut) {
        scans.incrementAndGet();
    }

    @Override
    public void fallbackPoll() {
        fallbackProbes.incrementAndGet();
    }

    @Override
    public void waiterWoken(String queue) {
        wakes.incrementAndGet();
    }

    @Override
    public void waiterWoken(QueueKind queue, WakeSource source) {
        ConcurrentLinkedQueue<Long> traced = deadlineWakes;
        if (traced != null && source == WakeSource.DEADLINE) {
            traced.add(RecordingClock.nowMicros());
        }
        wakesBySource.get(source).incrementAndGet();
        wakesByQueue.get(queue).incrementAndGet();
        waiterWoken(queue.label());
    }

    @Override
    public void uselessWake(QueueKind queue) {
        uselessByQueue.get(queue).incrementAndGet();
        uselessWakes.incrementAndGet();
    }

    /** From now on, remembers when each deadline wake was handed out (the timer thread's moment of firing). */
    void traceDeadlineWakes() {
        deadlineWakes = new ConcurrentLinkedQueue<>();
    }

    /** The deadline wakes since {@link #traceDeadlineWakes()}, in microseconds since the epoch, ascending. */
    long[] deadlineWakeMicros() {
        ConcurrentLinkedQueue<Long> traced = deadlineWakes;
        long[] out = traced == null ? new long[0] : traced.stream().mapToLong(Long::longValue).toArray();
        java.util.Arrays.sort(out);
        return out;
    }

    boolean listening() {
        return listening;
    }

    /** The counts so far. */
    Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("notifications", notifications.get());
        m.put("fallbackProbes", fallbackProbes.get());
        m.put("timerScans", scans.get());
        m.put("wakes", wakes.get());
        m.put("reconnects", reconnects.get());
        m.put("uselessWakes", uselessWakes.get());
        wakesBySource.forEach((k, v) -> m.put("wakes." + k.label(), v.get()));
        wakesByQueue.forEach((k, v) -> m.put("wakes." + k.label(), v.get()));
        uselessByQueue.forEach((k, v) -> m.put("uselessWakes." + k.label(), v.get()));
        return m;
    }

    /** {@code after - before}, per count. */
    static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> m = new LinkedHashMap<>();
        after.forEach((k, v) -> m.put(k, v - before.getOrDefault(k, 0L)));
        return m;
    }
}
