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
    /** Per thread: the last read, and the last read that the next one followed by at least {@link #GAP_MICROS}. */
    private final ThreadLocal<long[]> reads = ThreadLocal.withInitial(() -> new long[] {Long.MIN_VALUE,
            Long.MIN_VALUE});
    /** A pause between two reads of one thread this long is a statement's round trip, not a wait's loop. */
    private static final long GAP_MICROS = 250;
    private volatile boolean traceReads;

    @Override
    public long millis() {
        if (traceReads) {
            long micros = nowMicros();
            long[] r = reads.get();
            if (r[0] != Long.MIN_VALUE && micros - r[0] >= GAP_MICROS) {
                r[1] = r[0];
            }
            r[0] = micros;
            return remember(Math.floorDiv(micros, 1000));
        }
        return remember(System.currentTimeMillis());
    }

    /**
     * From now on, remembers per thread when {@link #millis()} was last read, to the microsecond (costs an
     * {@link Instant} per read, so only the scenarios that split a latency by it turn it on).
     */
    void traceReads() {
        traceReads = true;
    }

    /**
     * When this thread last read {@link #millis()} before a statement's round trip, in microseconds since the epoch
     * ({@link Long#MIN_VALUE}: never, or before {@link #traceReads()}), given that the call returned at
     * {@code returnedMicros}: a claim reads the clock right before its statement, and the reads after the statement
     * (a claim made ahead of a visibility time waits for that time reading the clock in a loop) follow each other
     * closely, so the claim's read is the last one that a pause of a round trip followed.
     */
    long readBeforeRoundTripMicros(long returnedMicros) {
        long[] r = reads.get();
        return r[0] == Long.MIN_VALUE || returnedMicros - r[0] >= GAP_MICROS ? r[0] : r[1];
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
