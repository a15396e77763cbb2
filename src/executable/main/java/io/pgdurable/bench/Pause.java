package io.pgdurable.bench;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;

/** Sleeping and waiting helpers of the benchmark threads: interruption ends a sleep and keeps the flag. */
final class Pause {
    private Pause() {}

    /** Sleeps; returns false when interrupted (the flag is kept). */
    static boolean sleep(long millis) {
        if (millis <= 0) {
            return !Thread.currentThread().isInterrupted();
        }
        try {
            Thread.sleep(millis);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Sleeps a uniformly random time in {@code [minMillis, maxMillis]}. */
    static boolean sleepRandom(long minMillis, long maxMillis) {
        return sleep(minMillis + ThreadLocalRandom.current().nextLong(maxMillis - minMillis + 1));
    }

    /** Waits until {@code condition} holds, checking every 5 ms; false when {@code timeoutMillis} passed first. */
    static boolean until(BooleanSupplier condition, long timeoutMillis) {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline || !sleep(5)) {
                return false;
            }
        }
        return true;
    }
}
