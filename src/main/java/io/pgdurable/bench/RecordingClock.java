package io.pgdurable.bench;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * The system clock, remembering per thread the last millisecond value it handed out. Given to a provider, it tells
 * the benchmark the exact {@code now} an operation passed into SQL (an enqueue's visibility base, a claim's lease
 * start): every provider operation reads the application clock once, on the calling thread, before its SQL call.
 */
final class RecordingClock extends Clock {
    private final ThreadLocal<long[]> last = ThreadLocal.withInitial(() -> new long[] {Long.MIN_VALUE});

    @Override
    public long millis() {
        long now = System.currentTimeMillis();
        last.get()[0] = now;
        return now;
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis());
    }

    /** The last value {@link #millis()} returned on this thread. */
    long lastOnThisThread() {
        return last.get()[0];
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("the benchmark clock is UTC only");
    }

    /** Microseconds since the epoch, now (for lateness against a millisecond visibility time). */
    static long nowMicros() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000;
    }
}
