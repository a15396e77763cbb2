package io.pgdurable.internal.longpoll;

import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Waits for the provider's clock to reach a visibility time that is at most the timer lead away. A deadline fires
 * {@code timerLead} before the time it stands for, so the fetch it wakes is already running when that time comes: a
 * parked thread's wake-up, and the timer's own, were most of a timer's lateness (docs/long-polling.md, "Timer
 * lead"); for a lease end, the read-only verification's round trip as well ("Lease ends verified ahead"). The rest of
 * the lead is waited out here, spinning while the poller's spin budget lasts and parking in short steps beyond it.
 */
final class VisibilityWait {
    /** Past the lead, how much longer a woken fetch waits for a visibility time (the clock's millisecond steps). */
    private static final long MAX_VISIBLE_WAIT_SLACK_NANOS = 2_000_000L;
    /** A fetch waiting out a timer's lead beyond the spin budget parks this long at a time. */
    private static final long PARK_STEP_NANOS = 100_000L;
    /**
     * Past the lead, how much longer a claim made ahead is held for its visibility time by the provider's clock: only
     * a clock that stepped back by more than this returns it before that time by the clock.
     */
    private static final long MAX_HOLD_SLACK_NANOS = 1_000_000_000L;

    private final Clock clock;
    private final long leadNanos;
    private final BooleanSupplier closed;
    /** At most 2 % of one core busy-waiting for visibility times, whatever the timer load. */
    private final SpinBudget spinBudget = new SpinBudget(20_000_000L);

    VisibilityWait(Clock clock, Duration timerLead, BooleanSupplier closed) {
        this.clock = clock;
        this.leadNanos = timerLead.toNanos();
        this.closed = closed;
    }

    /**
     * Waits until {@code atMs} by the provider's clock, so the fetch claims no earlier than that time. False when
     * interrupted, past {@code deadline} ({@link System#nanoTime()}) or closing before that time came; true at once
     * when it has come, and true when the lead plus the clock's slack passed first (the clock stepped back: the claim
     * finds what is there).
     */
    boolean awaitVisible(long atMs, long deadline) {
        if (clock.millis() >= atMs) {
            return true;
        }
        return park(atMs, deadline, false);
    }

    /**
     * Holds a claim made ahead of {@code atMs} until that time by the provider's clock, so it is not returned early:
     * like {@link #awaitVisible}, but neither an interrupt, the fetch's own timeout nor closing cuts it short (the
     * item is claimed already). Spinning stops at the lead plus the clock's slack, parking goes on; a clock that
     * stepped back by more than {@link #MAX_HOLD_SLACK_NANOS} ends the hold there. An interrupt is kept for the caller.
     */
    void holdUntil(long atMs) {
        park(atMs, 0, true);
    }

    /**
     * The one wait loop: spins (within the budget) until the lead plus the clock's slack has passed, parks in short
     * steps beyond it; a hold goes on parking for {@link #MAX_HOLD_SLACK_NANOS} more and is cut short by nothing, a
     * visibility wait ends there and is cut short by an interrupt, its {@code deadline} or closing (false).
     */
    private boolean park(long atMs, long deadline, boolean hold) {
        long start = System.nanoTime();
        long spinLimit = start + leadNanos + MAX_VISIBLE_WAIT_SLACK_NANOS;
        long limit = hold ? spinLimit + MAX_HOLD_SLACK_NANOS : spinLimit;
        boolean spin = spinBudget.allows(start);
        boolean interrupted = false;
        try {
            while (clock.millis() < atMs) {
                long now = System.nanoTime();
                if (!hold && (closed.getAsBoolean() || Thread.currentThread().isInterrupted() || now - deadline >= 0)) {
                    return false;
                }
                if (now - limit >= 0) {
                    return true; // the clock stepped back
                }
                if (spin && now - spinLimit < 0) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(PARK_STEP_NANOS);
                    if (hold) {
                        interrupted |= Thread.interrupted(); // a pending interrupt would make every park return at once
                    }
                }
            }
            return true;
        } finally {
            if (spin) {
                spinBudget.spent(Math.min(System.nanoTime(), spinLimit) - start);
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
