package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Routes hints: wakes for what is claimable now, tracks the rest as {@link Deadlines} and fires them on the timer
 * thread when they come due, never early. A due visibility time wakes; a due lease end goes to
 * {@link LeaseEndVerification}. Its lock guards the deadlines and the verification's bookkeeping, and is never held
 * while anything waits or talks to the database.
 */
final class DeadlineTimer {
    /** Farther deadlines are armed at this distance and re-armed when it passes (keeps microseconds in range). */
    private static final long MAX_ARM_MS = Duration.ofDays(1).toMillis();

    /** What a scan starts from: the deadlines' mark and the lease ends it verifies. */
    record ScanStart(long mark, LeaseEndVerification.Due verifying) {}

    private final Clock clock;
    private final WaiterRegistry registry;
    private final ScheduledExecutorService timer;
    private final LeaseEndVerification verification;
    private final Runnable requestScan;
    private final Runnable verify;
    private final ReentrantLock lock = new ReentrantLock();
    private final Deadlines deadlines;

    /**
     * @param requestScan asks for a timer scan (after deadlines were dropped for capacity)
     * @param verify      starts a scan that verifies due lease ends (without doubting what was announced)
     */
    DeadlineTimer(Clock clock, WaiterRegistry registry, ScheduledExecutorService timer, LongPoller.Settings settings,
                  LeaseEndVerification verification, Runnable requestScan, Runnable verify) {
        this.clock = clock;
        this.registry = registry;
        this.timer = timer;
        this.verification = verification;
        this.requestScan = requestScan;
        this.verify = verify;
        this.deadlines = new Deadlines(settings.maxTrackedDeadlines(), settings.timerLead().toNanos() / 1000);
    }

    /** Future wake-up times tracked right now. */
    int size() {
        lock.lock();
        try {
            return deadlines.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Wakes for what is claimable now ({@code source}: where the hint came from); tracks the rest, and lease ends
     * even when due (see {@link #fireDue}): when those fire, their wakes count as deadlines.
     */
    void route(Hint hint, WakeSource source) {
        if (hint.count() > 0 && hint.atMs() <= clock.millis()) {
            registry.wake(hint, null, source);
            return;
        }
        long fireAt = Long.MAX_VALUE;
        lock.lock();
        try {
            if (deadlines.add(hint)) {
                fireAt = deadlines.earliestMicros();
            }
        } finally {
            lock.unlock();
        }
        if (fireAt != Long.MAX_VALUE) {
            arm(fireAt);
        }
    }

    /** Takes the mark and the lease ends to verify for a scan that starts now, in one step. */
    ScanStart scanStarts() {
        lock.lock();
        try {
            return new ScanStart(deadlines.mark(), verification.take());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Forgets the lease ends offered before {@code mark} that a scan answer supersedes (below its horizon), and the
     * overflow a complete answer covers; returns how many lease ends were forgotten.
     */
    int forgetSuperseded(long mark, ScanAnswer answer) {
        int dropped = 0;
        lock.lock();
        try {
            for (QueueKind q : QueueKind.values()) {
                dropped += deadlines.dropLeaseEnds(q, mark, answer.horizon(q));
            }
            if (answer.complete()) {
                deadlines.overflowCoveredBy(mark);
            }
        } finally {
            lock.unlock();
        }
        return dropped;
    }

    /** Whether deadlines were dropped for capacity since the last call (a rescan is due). */
    boolean takeOverflow() {
        lock.lock();
        try {
            boolean overflowed = deadlines.overflowed();
            if (overflowed) {
                deadlines.clearOverflow();
            }
            return overflowed;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Schedules {@link #fireDue} for {@code atMicros}, counted from the clock's own sub-millisecond reading: a delay
     * counted from the truncated {@code clock.millis()} would fire up to a millisecond late (half on average).
     * Firing a few microseconds early on a clock step is harmless: {@link #fireDue} re-arms what is not yet due.
     */
    private void arm(long atMicros) {
        long delayMicros = Math.max(0, Math.min(atMicros - nowMicros(), MAX_ARM_MS * 1000));
        try {
            timer.schedule(this::fireDue, delayMicros, TimeUnit.MICROSECONDS);
        } catch (RejectedExecutionException closing) {
            // shutting down
        }
    }

    private long nowMicros() {
        Instant now = clock.instant();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    }

    /**
     * Fires due deadlines, never early. A due visibility time wakes; a due lease end (count 0) wakes nobody and asks
     * {@link LeaseEndVerification} instead. Deadlines dropped for capacity ask for a rescan once the kept ones fired.
     */
    private void fireDue() {
        long nowMicros = nowMicros();
        long now = Math.floorDiv(nowMicros, 1000);
        List<Hint> wake = new ArrayList<>();
        long next;
        boolean rescan;
        boolean verifyNow = false;
        lock.lock();
        try {
            for (Hint h : deadlines.dueMicros(nowMicros)) {
                if (h.count() > 0) {
                    wake.add(h);
                } else {
                    verifyNow |= verification.due(h, now, deadlines);
                }
            }
            next = deadlines.earliestMicros();
            rescan = takeOverflow();
        } finally {
            lock.unlock();
        }
        for (Hint h : wake) {
            registry.wake(h, null, WakeSource.DEADLINE);
        }
        if (next != Long.MAX_VALUE) {
            arm(next);
        }
        if (rescan) {
            requestScan.run();
        } else if (verifyNow) {
            verify.run();
        }
    }
}
