package io.pgdurable.bench;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * The system clock, remembering per thread the first millisecond value it handed out since the thread's last
 * {@link #mark()}. Given to a provider, it tells the benchmark the exact {@code now} an operation passed into SQL (an
 * enqueue's visibility base, a claim's lease start): every provider operation reads the application clock on the
 * calling thread before its SQL call, and that read is the first one of the call. Later reads of the same call (long
 * polling arming a timer for the hint the operation produced) are not its {@code now}: taking the last read instead
 * put visibility times and lease ends a statement's duration late, which showed as early deliveries.
 */
final class RecordingClock extends Clock {
    private final ThreadLocal<long[]> first = ThreadLocal.withInitial(() -> new long[] {Long.MIN_VALUE});

    @Override
    public long millis() {
        return remember(System.currentTimeMillis());
    }

    /**
     * The system clock's own resolution (microseconds here), as {@code Clock.systemUTC()} gives a provider: long
     * polling arms its timers from the sub-millisecond part, and an instant truncated to the millisecond made every
     * deadline fire up to a millisecond late (half on average), a delay no provider on the system clock has.
     */
    @Override
    public Instant instant() {
        Instant now = Instant.now();
        remember(now.toEpochMilli());
        return now;
    }

    private long remember(long nowMs) {
        long[] f = first.get();
        if (f[0] == Long.MIN_VALUE) {
            f[0] = nowMs;
        }
        return nowMs;
    }

    /** Starts an operation on this thread: the next {@link #millis()} read is its {@code now}. */
    void mark() {
        first.get()[0] = Long.MIN_VALUE;
    }

    /** The first value {@link #millis()} returned on this thread since {@link #mark()}. */
    long firstSinceMark() {
        long f = first.get()[0];
        if (f == Long.MIN_VALUE) {
            throw new IllegalStateException("the operation read no clock since the mark");
        }
        return f;
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
