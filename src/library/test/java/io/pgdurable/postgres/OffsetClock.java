package io.pgdurable.postgres;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The system clock plus an offset a test sets or moves: a node whose clock is skewed, or leases that expire without
 * waiting. Millisecond resolution, as every lease and visibility time is.
 */
public final class OffsetClock extends Clock {
    private final AtomicLong offsetMs;

    public OffsetClock(long offsetMs) {
        this.offsetMs = new AtomicLong(offsetMs);
    }

    public void set(long ms) {
        offsetMs.set(ms);
    }

    public void advance(Duration d) {
        offsetMs.addAndGet(d.toMillis());
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }

    @Override
    public long millis() {
        return System.currentTimeMillis() + offsetMs.get();
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis());
    }
}
