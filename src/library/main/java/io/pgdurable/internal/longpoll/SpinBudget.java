package io.pgdurable.internal.longpoll;

import java.util.concurrent.atomic.AtomicLong;

/**
 * How much busy-waiting a poller allows itself: spinning starts only while less than {@code nanosPerSecond} was
 * spent in the current second, shared by all its threads (a spin that starts under the budget may end a little
 * over it). A wait the budget does not cover parks instead.
 */
final class SpinBudget {
    private static final long WINDOW_NANOS = 1_000_000_000L;
    private final long nanosPerWindow;
    private final AtomicLong windowStart = new AtomicLong(System.nanoTime());
    private final AtomicLong spent = new AtomicLong();

    SpinBudget(long nanosPerSecond) {
        this.nanosPerWindow = nanosPerSecond;
    }

    /** Whether a spin may start at {@code now} ({@link System#nanoTime()}). */
    boolean allows(long now) {
        long start = windowStart.get();
        if (now - start >= WINDOW_NANOS && windowStart.compareAndSet(start, now)) {
            spent.set(0);
        }
        return spent.get() < nanosPerWindow;
    }

    /** Counts {@code nanos} of spinning against the current second. */
    void spent(long nanos) {
        spent.addAndGet(nanos);
    }
}
