package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Runs long-polled fetches: registers the fetch before its first claim (no lost wake), claims, parks until a hint
 * wakes it, claims again, until it has work or its poll timeout ends. A wake it could not use is passed on once; a
 * fetch whose wakes keep failing waits out the coalescing cadence; a fetch woken for a visibility time waits for that
 * time (or claims ahead of it and holds what it claimed). Remembers which claims found nothing, so a re-issued fetch
 * with nothing announced since parks without its first claim.
 */
final class ParkedFetch {
    /** Distinct claim keys remembered (filters times session owners); past it, the memory starts over. */
    private static final int MAX_CLAIM_KEYS = 4096;

    private final WaiterRegistry registry;
    private final LongPollSignals signals;
    private final Clock clock;
    private final VisibilityWait visibility;
    private final long timerLeadMs;
    private final long coalescingNanos;
    private final BooleanSupplier listening;
    private final BooleanSupplier closed;
    /** Per claim key, the queue epoch at the start of its latest claim that found nothing. */
    private final ConcurrentHashMap<Object, Long> emptyAt = new ConcurrentHashMap<>();

    ParkedFetch(WaiterRegistry registry, LongPollSignals signals, Clock clock, LongPoller.Settings settings,
                BooleanSupplier listening, BooleanSupplier closed) {
        this.registry = registry;
        this.signals = signals;
        this.clock = clock;
        this.visibility = new VisibilityWait(clock, settings.timerLead(), closed);
        this.timerLeadMs = settings.timerLead().toMillis();
        this.coalescingNanos = settings.wakeCoalescing().toNanos();
        this.listening = listening;
        this.closed = closed;
    }

    /**
     * Notifications may have been missed (asked after every (re)LISTEN, among others): no claim is skipped on the
     * strength of what was (not) announced before.
     */
    void doubtAnnouncements() {
        registry.touchAll();
        if (emptyAt.size() > MAX_CLAIM_KEYS) {
            emptyAt.clear();
        }
    }

    /** See {@link LongPoller#fetchClaimingAhead}; {@code claimsAhead} false: every claim asks for what is visible now. */
    <T> Optional<T> run(QueueKind queue, Route route, Object claimKey, Object takes, Duration pollTimeout,
                        String operation, LongPoller.Claim<T> claim, boolean claimsAhead) {
        if (pollTimeout == null || pollTimeout.isZero() || pollTimeout.isNegative() || closed.getAsBoolean()) {
            return claim.attempt(LongPoller.Claim.NOW);
        }
        long deadline = System.nanoTime() + waitNanos(pollTimeout);
        Waiter waiter = registry.register(queue, route, takes, operation);
        if (waiter == null) {
            return claim.attempt(LongPoller.Claim.NOW); // closing: no more parking
        }
        try {
            Hint wokenBy = null;
            long lastUnsuccessfulWake = 0;
            int unsuccessfulWakes = 0;
            boolean first = true;
            boolean handedOn = false;
            long ahead = LongPoller.Claim.NOW;
            while (true) {
                long epoch = registry.epoch(queue);
                Optional<T> result;
                if (handedOn) {
                    result = Optional.empty(); // the wake went to a fetch that claims at once; this one waits on
                    handedOn = false;
                } else if (first && knownEmpty(claimKey, epoch)) {
                    result = Optional.empty();
                    signals.claimSkipped(queue.label());
                } else {
                    result = claim.attempt(ahead);
                    if (result.isEmpty() && claimKey != null) {
                        emptyAt.merge(claimKey, epoch, Math::max);
                    }
                }
                first = false;
                if (ahead != LongPoller.Claim.NOW) {
                    long visibleAt = ahead;
                    ahead = LongPoller.Claim.NOW;
                    if (result.isPresent()) {
                        visibility.holdUntil(visibleAt);
                    } else {
                        if (!visibility.awaitVisible(visibleAt, deadline)) {
                            // A claim was spent on this wake: passed on as after a useless claim, not as unused.
                            if (wokenBy.hops() == 0) {
                                registry.wake(wokenBy.passedOn(), waiter, WakeSource.HANDOFF);
                            }
                            signals.uselessWake(queue);
                            return Optional.empty();
                        }
                        continue; // the claim at that time, as without the lead
                    }
                }
                if (result.isPresent()) {
                    if (wokenBy != null && wokenBy.openEnded() && wokenBy.hops() == 0) {
                        registry.wake(wokenBy.chained(), waiter, WakeSource.HANDOFF); // help drain a burst
                    }
                    return result;
                }
                if (wokenBy != null) {
                    if (wokenBy.hops() == 0) {
                        // Maybe it was meant for another filter; or (either queue) another fetch, woken for a later
                        // item, took this wake's item first and that later item is still unclaimed: pass it on once.
                        registry.wake(wokenBy.passedOn(), waiter, WakeSource.HANDOFF);
                    }
                    signals.uselessWake(queue);
                    if (wokenBy.hops() == 0) {
                        // Only a wake meant for this fetch alone says its wakes keep failing: a passed-on wake or
                        // the probe's wake-everyone is a guess that often fails by design.
                        unsuccessfulWakes++;
                        lastUnsuccessfulWake = System.nanoTime();
                    }
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    return Optional.empty();
                }
                Object outcome = waiter.await(remaining);
                if (outcome instanceof Waiter.Delivered delivered) {
                    @SuppressWarnings("unchecked")
                    T item = (T) delivered.item();
                    return Optional.of(item);
                }
                boolean aheadWake = outcome instanceof Waiter.Ahead;
                if (aheadWake) {
                    outcome = ((Waiter.Ahead) outcome).hint();
                }
                if (!(outcome instanceof Hint hint)) {
                    return Optional.empty(); // timed out, closed or interrupted (the flag is kept)
                }
                wokenBy = hint;
                // One useless wake is common and cheap (a wake raced by another fetch): only a fetch whose wakes
                // keep failing waits out the cadence, so a real wake right after a useless one is served at once.
                // A wake for it meanwhile is not kept waiting with it: a fetch that can claim at once takes it
                // (the wake's one pass), and this fetch waits on without a claim.
                if (unsuccessfulWakes >= 2 && paused(lastUnsuccessfulWake)) {
                    if (hint.hops() == 0 && registry.wake(hint.passedOn(), waiter, WakeSource.HANDOFF) > 0) {
                        wokenBy = null;
                        handedOn = true;
                        continue;
                    }
                    if (!coalesce(waiter, lastUnsuccessfulWake, deadline)) {
                        // Out of time (or interrupted, or closing) before the claim this wake asked for: the wake
                        // was never used, so it goes to another waiter instead of ending with this fetch.
                        registry.wake(hint, waiter, WakeSource.HANDOFF);
                        return Optional.empty();
                    }
                }
                long untilVisible = hint.atMs() - clock.millis();
                if (claimsAhead && aheadWake && untilVisible > 0 && untilVisible <= timerLeadMs + 1) {
                    ahead = hint.atMs();
                } else if (!visibility.awaitVisible(hint.atMs(), deadline)) {
                    registry.wake(hint, waiter, WakeSource.HANDOFF); // unused, as above
                    return Optional.empty();
                }
            }
        } finally {
            registry.deregister(queue, waiter);
        }
    }

    /** A claim with this key found nothing at this epoch, and the listener is up to hear of anything new. */
    private boolean knownEmpty(Object claimKey, long epoch) {
        if (claimKey == null || !listening.getAsBoolean()) {
            return false;
        }
        Long empty = emptyAt.get(claimKey);
        return empty != null && empty == epoch;
    }

    /**
     * The poll timeout in nanoseconds, capped at about 73 years: {@link Duration#toNanos()} overflows for longer
     * durations (a caller's "wait forever"), and the cap keeps deadline arithmetic clear of overflow.
     */
    private static long waitNanos(Duration pollTimeout) {
        long cap = Long.MAX_VALUE / 4;
        return pollTimeout.compareTo(Duration.ofNanos(cap)) >= 0 ? cap : pollTimeout.toNanos();
    }

    /** Within a cadence of the last useless wake: a fetch whose wakes keep failing waits before it claims again. */
    private boolean paused(long lastUnsuccessfulWake) {
        return System.nanoTime() - lastUnsuccessfulWake < coalescingNanos;
    }

    /**
     * Waits out the cadence after the last useless wake (repeated unsuccessful wakes retry at most once per cadence);
     * false when interrupted, out of time or closing. Meanwhile the fetch refuses wakes, so they go to fetches that
     * claim at once instead of waiting here (it claims after the pause in any case).
     */
    private boolean coalesce(Waiter waiter, long lastUnsuccessfulWake, long deadline) {
        long until = Math.min(lastUnsuccessfulWake + coalescingNanos, deadline);
        long wait = until - System.nanoTime();
        if (wait <= 0) {
            // A wake that arrives once the deadline has passed is handed on like one that arrives during the pause.
            return System.nanoTime() < deadline && !closed.getAsBoolean();
        }
        boolean refusing = waiter.pause();
        try {
            TimeUnit.NANOSECONDS.sleep(wait);
            return System.nanoTime() < deadline && !closed.getAsBoolean();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            if (refusing) {
                waiter.resume();
            }
        }
    }
}
