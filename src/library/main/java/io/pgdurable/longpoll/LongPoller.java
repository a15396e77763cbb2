package io.pgdurable.longpoll;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets a fetch park until work is claimable. Hints arrive from the listener (NOTIFY), from local deadlines (delayed
 * visibility, lease ends), from timer scans (after every (re)LISTEN, periodically, after deadline overflow) and from
 * a one-second fallback probe that runs whenever fetches wait, whatever the listener and the scans are doing.
 * A hint wakes about one matching waiter per announced item; the woken fetch asks the database, which decides.
 * A lease end that comes due wakes nobody by itself: read-only questions first ask whether anything became
 * claimable (most leases end in an ack long before their time, and a claim for a gone item is a wasted write).
 *
 * <p>It never claims work itself and never builds SQL: the provider hands it the claim to retry and a
 * {@link WorkScanner} for its read-only questions.
 */
public final class LongPoller implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LongPoller.class);
    /** Farther deadlines are armed at this distance and re-armed when it passes (keeps microseconds in range). */
    private static final long MAX_ARM_MS = Duration.ofDays(1).toMillis();
    /** Distinct claim keys remembered (filters times session owners); past it, the memory starts over. */
    private static final int MAX_CLAIM_KEYS = 4096;
    /** Past the lead, how much longer a woken fetch waits for a visibility time (the clock's millisecond steps). */
    private static final long MAX_VISIBLE_WAIT_SLACK_NANOS = 2_000_000L;
    /** A fetch waiting out a timer's lead beyond the spin budget parks this long at a time. */
    private static final long PARK_STEP_NANOS = 100_000L;
    /**
     * Past the lead, how much longer a claim made ahead is held for its visibility time by the provider's clock: only
     * a clock that stepped back by more than this returns it before that time by the clock.
     */
    private static final long MAX_HOLD_SLACK_NANOS = 1_000_000_000L;

    /** The tunables, validated by the provider's configuration. */
    public record Settings(Duration fallbackInterval, Duration wakeCoalescing, Duration recoveryScanInterval,
                           int maxParkedWaiters, Duration heartbeat, int maxTrackedDeadlines, Duration timerLead) {}

    private final Settings settings;
    private final Clock clock;
    private final WorkScanner scanner;
    private final LongPollSignals signals;
    private final WaiterRegistry registry;
    private final Notifier notifier;
    private final ReentrantLock deadlineLock = new ReentrantLock();
    private final Deadlines deadlines;
    /** Per queue, when the latest verification of due lease ends was asked for (guarded by deadlineLock). */
    private final Map<QueueKind, Long> lastVerification = new EnumMap<>(QueueKind.class);
    /**
     * Per queue, the due lease ends (routes merged) a requested scan has yet to verify; taken when the scan starts
     * (guarded by deadlineLock).
     */
    private final Map<QueueKind, Hint> toVerify = new EnumMap<>(QueueKind.class);
    /**
     * Per queue, the latest time among the lease ends in {@link #toVerify}: they fire {@code timerLead} early, so the
     * verification asks about this time, which covers each of them (guarded by deadlineLock).
     */
    private final Map<QueueKind, Long> verifyAt = new EnumMap<>(QueueKind.class);
    private final ScheduledExecutorService timer;
    private final ExecutorService scans;
    private final ExecutorService probes;
    private final AtomicBoolean scanRunning = new AtomicBoolean();
    private final AtomicBoolean scanPending = new AtomicBoolean();
    private final AtomicBoolean probeRunning = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** At most 2 % of one core busy-waiting for visibility times, whatever the timer load. */
    private final SpinBudget spinBudget = new SpinBudget(20_000_000L);
    /** Per claim key, the queue epoch at the start of its latest claim that found nothing. */
    private final ConcurrentHashMap<Object, Long> emptyAt = new ConcurrentHashMap<>();
    private volatile String ownOrigin;
    /** Hand-over across processes: where items another process handed to this one go. */
    private volatile Consumer<String> handOffs;

    public LongPoller(Settings settings, Clock clock, WorkScanner scanner, NotificationListener listener,
                      String channel, LongPollSignals signals) {
        this.settings = settings;
        this.clock = clock;
        this.scanner = scanner;
        this.signals = signals;
        this.registry = new WaiterRegistry(settings.maxParkedWaiters(), signals);
        this.deadlines = new Deadlines(settings.maxTrackedDeadlines(), settings.timerLead().toNanos() / 1000);
        for (QueueKind q : QueueKind.values()) {
            lastVerification.put(q, Long.MIN_VALUE / 2);
        }
        this.timer = Executors.newSingleThreadScheduledExecutor(daemon("pgdurable-longpoll-timer-" + channel));
        this.scans = Executors.newSingleThreadExecutor(daemon("pgdurable-longpoll-scan-" + channel));
        this.probes = Executors.newSingleThreadExecutor(daemon("pgdurable-longpoll-probe-" + channel));
        this.notifier = new Notifier(listener, channel, settings.heartbeat(), this::onNotification,
                this::listening, signals);
    }

    public void start() {
        notifier.start();
        long fallback = settings.fallbackInterval().toMillis();
        timer.scheduleWithFixedDelay(this::fallbackTick, fallback, fallback, TimeUnit.MILLISECONDS);
        long recovery = settings.recoveryScanInterval().toMillis();
        timer.scheduleWithFixedDelay(this::requestScan, recovery, recovery, TimeUnit.MILLISECONDS);
    }

    /** True while the listener connection is up and LISTENing. */
    public boolean isListening() {
        return notifier.isListening();
    }

    /** Wakes handed out since start (for the wakes-per-item measurement). */
    public long wakesIssued() {
        return registry.wakesIssued();
    }

    /** Future wake-up times tracked right now (delayed visibility, lease ends), for tests and metrics. */
    public int trackedDeadlines() {
        deadlineLock.lock();
        try {
            return deadlines.size();
        } finally {
            deadlineLock.unlock();
        }
    }

    /** Fetches currently registered (parked or claiming). */
    public int waiting() {
        return registry.size();
    }

    /** Fetches currently registered on {@code queue} (parked or claiming). */
    public int waiting(QueueKind queue) {
        return registry.size(queue);
    }

    /**
     * Runs {@code claim} until it returns work or {@code pollTimeout} ends, parking between attempts. The timeout
     * bounds only the waiting: a claim in flight always completes and its result is returned.
     */
    public <T> Optional<T> fetch(QueueKind queue, Route route, Duration pollTimeout, String operation,
                                 Supplier<Optional<T>> claim) {
        return fetch(queue, route, null, pollTimeout, operation, claim);
    }

    /**
     * {@link #fetch(QueueKind, Route, Duration, String, Supplier)} for a claim identified by {@code claimKey} (equal
     * keys: equal claims, whatever their lease time). When the last claim with this key found nothing and no hint
     * has reached the queue since it started (the listener up throughout), the first claim is skipped and the fetch
     * parks at once: it would find nothing, exactly as the previous fetch's wait would have gone on. The same hints,
     * deadlines and fallback probe that wake a parked fetch wake this one. A dispatcher that re-issues its fetch
     * every poll timeout therefore costs no statement per re-issue; a fetch with a new key, or after any hint,
     * claims first as always.
     */
    public <T> Optional<T> fetch(QueueKind queue, Route route, Object claimKey, Duration pollTimeout,
                                 String operation, Supplier<Optional<T>> claim) {
        return fetch(queue, route, claimKey, null, pollTimeout, operation, claim);
    }

    /**
     * {@link #fetch(QueueKind, Route, Object, Duration, String, Supplier)} for a fetch that also takes items handed
     * over by this process's writers while it is parked: {@code takes} describes what it takes (the writer's
     * {@link #reserve} predicate reads it), and a handed-over item, already leased to it in the writer's
     * transaction, is returned as the fetch's result without a claim. Null: claims only.
     */
    public <T> Optional<T> fetch(QueueKind queue, Route route, Object claimKey, Object takes, Duration pollTimeout,
                                 String operation, Supplier<Optional<T>> claim) {
        return fetch(queue, route, claimKey, takes, pollTimeout, operation, visibleBy -> claim.get(), false);
    }

    /** One claim attempt of a fetch that can claim ahead of a visibility time. */
    @FunctionalInterface
    public interface Claim<T> {
        /** {@code visibleByMs} for a claim of what is visible by the claim's own clock. */
        long NOW = Long.MIN_VALUE;

        /**
         * Claims what is visible by {@code visibleByMs} ({@link #NOW}: by the claim's own clock; else a visibility
         * time at most the timer lead ahead of it, which the fetch waits for before it returns the claim). Leases
         * are always judged by the claim's own clock: one that has not ended is never taken.
         */
        Optional<T> attempt(long visibleByMs);
    }

    /**
     * {@link #fetch(QueueKind, Route, Object, Object, Duration, String, Supplier)} for a claim that can ask for what
     * becomes visible by a given time. A fetch a deadline wakes for a visibility time then claims at once, up to
     * {@code timerLead} ahead of that time, and returns what it claimed no earlier than that time: the claim's round
     * trip overlaps the lead instead of following the time (docs/long-polling.md, "Timers claimed ahead"). A claim
     * ahead that finds nothing is repeated once at that time, as the fetch would have claimed without the lead: an
     * instance whose lease ends in between is claimable then and not before.
     */
    public <T> Optional<T> fetchClaimingAhead(QueueKind queue, Route route, Object claimKey, Object takes,
                                              Duration pollTimeout, String operation, Claim<T> claim) {
        return fetch(queue, route, claimKey, takes, pollTimeout, operation, claim, true);
    }

    private <T> Optional<T> fetch(QueueKind queue, Route route, Object claimKey, Object takes, Duration pollTimeout,
                                  String operation, Claim<T> claim, boolean claimsAhead) {
        if (pollTimeout == null || pollTimeout.isZero() || pollTimeout.isNegative() || closed.get()) {
            return claim.attempt(Claim.NOW);
        }
        long deadline = System.nanoTime() + waitNanos(pollTimeout);
        Waiter waiter = registry.register(queue, route, takes, operation);
        if (waiter == null) {
            return claim.attempt(Claim.NOW); // closing: no more parking
        }
        try {
            Hint wokenBy = null;
            long lastUnsuccessfulWake = 0;
            int unsuccessfulWakes = 0;
            boolean first = true;
            boolean handedOn = false;
            long ahead = Claim.NOW;
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
                if (ahead != Claim.NOW) {
                    long visibleAt = ahead;
                    ahead = Claim.NOW;
                    if (result.isPresent()) {
                        holdUntil(visibleAt);
                    } else {
                        if (!awaitVisible(visibleAt, deadline)) {
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
                if (claimsAhead && aheadWake && untilVisible > 0
                        && untilVisible <= settings.timerLead().toMillis() + 1) {
                    ahead = hint.atMs();
                } else if (!awaitVisible(hint.atMs(), deadline)) {
                    registry.wake(hint, waiter, WakeSource.HANDOFF); // unused, as above
                    return Optional.empty();
                }
            }
        } finally {
            registry.deregister(queue, waiter);
        }
    }

    /**
     * Reserves a parked fetch of {@code queue} for an item this process is about to write: the oldest one without a
     * pending wake whose {@code takes} the item {@code fits}. Null when there is none (or the poller is closing): the
     * writer then writes as usual. A reservation must end in {@link Reservation#handOver} or
     * {@link Reservation#cancel}; meanwhile the fetch waits on (its own timeout still applies).
     */
    public Reservation reserve(QueueKind queue, Predicate<Object> fits) {
        if (closed.get()) {
            return null;
        }
        Waiter w = registry.reserve(queue, fits);
        return w == null ? null : new Reservation(registry, queue, w);
    }

    /** A claim with this key found nothing at this epoch, and the listener is up to hear of anything new. */
    private boolean knownEmpty(Object claimKey, long epoch) {
        if (claimKey == null || !notifier.isListening()) {
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

    /**
     * A deadline fires {@code timerLead} before the time it stands for, so the fetch it wakes is already running when
     * that time comes: a parked thread's wake-up, and the timer's own, were most of a timer's lateness
     * (docs/benchmarks.md, "Timer lead"); for a lease end, the read-only verification's round trip as well ("Lease
     * ends verified ahead"). The fetch waits out the rest here, spinning while the poller's spin budget lasts and
     * parking in short steps beyond it, and claims no earlier than {@code atMs} by the provider's clock. False when
     * interrupted, out of time or closing before that time came.
     */
    private boolean awaitVisible(long atMs, long deadline) {
        if (clock.millis() >= atMs) {
            return true;
        }
        long start = System.nanoTime();
        long limit = start + settings.timerLead().toNanos() + MAX_VISIBLE_WAIT_SLACK_NANOS;
        boolean spin = spinBudget.allows(start);
        try {
            while (clock.millis() < atMs) {
                long now = System.nanoTime();
                if (closed.get() || Thread.currentThread().isInterrupted() || now - deadline >= 0) {
                    return false;
                }
                if (now - limit >= 0) {
                    return true; // the clock stepped back: the claim finds what is there
                }
                if (spin) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(PARK_STEP_NANOS);
                }
            }
            return true;
        } finally {
            if (spin) {
                spinBudget.spent(System.nanoTime() - start);
            }
        }
    }

    /**
     * Holds a claim made ahead of {@code atMs} until that time by the provider's clock, so it is not returned early:
     * like {@link #awaitVisible}, but neither an interrupt, the fetch's own timeout nor closing cuts it short (the
     * item is claimed already). Spinning stops at the lead plus the clock's slack, parking goes on; a clock that
     * stepped back by more than {@link #MAX_HOLD_SLACK_NANOS} ends the hold there. An interrupt is kept for the caller.
     */
    private void holdUntil(long atMs) {
        long start = System.nanoTime();
        long spinLimit = start + settings.timerLead().toNanos() + MAX_VISIBLE_WAIT_SLACK_NANOS;
        long limit = spinLimit + MAX_HOLD_SLACK_NANOS;
        boolean spin = spinBudget.allows(start);
        boolean interrupted = false;
        try {
            while (clock.millis() < atMs) {
                long now = System.nanoTime();
                if (now - limit >= 0) {
                    break;
                }
                if (spin && now - spinLimit < 0) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(PARK_STEP_NANOS);
                    interrupted |= Thread.interrupted(); // a pending interrupt would make every park return at once
                }
            }
        } finally {
            if (spin) {
                spinBudget.spent(Math.min(System.nanoTime(), spinLimit) - start);
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Within a cadence of the last useless wake: a fetch whose wakes keep failing waits before it claims again. */
    private boolean paused(long lastUnsuccessfulWake) {
        return System.nanoTime() - lastUnsuccessfulWake < settings.wakeCoalescing().toNanos();
    }

    /**
     * Waits out the cadence after the last useless wake (repeated unsuccessful wakes retry at most once per cadence);
     * false when interrupted, out of time or closing. Meanwhile the fetch refuses wakes, so they go to fetches that
     * claim at once instead of waiting here (it claims after the pause in any case).
     */
    private boolean coalesce(Waiter waiter, long lastUnsuccessfulWake, long deadline) {
        long until = Math.min(lastUnsuccessfulWake + settings.wakeCoalescing().toNanos(), deadline);
        long wait = until - System.nanoTime();
        if (wait <= 0) {
            // A wake that arrives once the deadline has passed is handed on like one that arrives during the pause.
            return System.nanoTime() < deadline && !closed.get();
        }
        boolean refusing = waiter.pause();
        try {
            TimeUnit.NANOSECONDS.sleep(wait);
            return System.nanoTime() < deadline && !closed.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            if (refusing) {
                waiter.resume();
            }
        }
    }

    // ------------------------------------------------------------------ hints in

    /**
     * A hint from this process's own announcer, as of the announcing operation's time {@code nowMs}: routed without
     * the round trip through the database (the same announcement comes back by NOTIFY and is then ignored, see
     * {@link #ignoreOrigin}). A hint due now wakes a waiter on the caller's thread; a future one is tracked on the
     * caller's thread too, and the timer thread hears of it only when it became the earliest deadline (its arming
     * reads the clock afresh: arming from {@code nowMs}, read before the operation's SQL, would fire late by the
     * statement's duration). Every claim offers its lease end here, so a hand-off to the timer thread per claim was
     * a thread wake-up per claim; later lease ends than the earliest need none.
     */
    public void offer(Hint hint, long nowMs) {
        if (closed.get()) {
            return;
        }
        if (hint.count() > 0 && hint.atMs() <= nowMs) {
            registry.wake(hint, null, WakeSource.ANNOUNCEMENT);
            return;
        }
        route(hint, WakeSource.ANNOUNCEMENT);
    }

    /** After LISTEN (again): the catch-up scan, and a new liveness key for whoever counts the takers. */
    private void listening() {
        requestScan();
        registry.recountTakers();
    }

    /**
     * Hand-over across processes: {@code counter} runs whenever a worker fetch that takes hand-overs registers or
     * ends and whenever the listener (re)connected; {@code handOffs} gets every notification that hands this process an item
     * (payloads starting {@code h|}), on the listener's thread, so it must return quickly.
     */
    public void handOverAcrossProcesses(Runnable counter, Consumer<String> handOffs) {
        this.handOffs = handOffs;
        registry.watchTakers(QueueKind.WORKER, counter);
    }

    /** What each registered fetch of {@code queue} that takes hand-overs takes, oldest first. */
    public List<Object> takers(QueueKind queue) {
        return registry.takers(queue);
    }

    /** The advisory lock key the listener's session holds while it lives; 0 when not listening or none. */
    public long livenessKey() {
        return notifier.livenessKey();
    }

    /** Notifications carrying this origin were already offered locally. */
    void ignoreOrigin(String origin) {
        this.ownOrigin = origin;
    }

    private void onNotification(String payload) {
        if (payload != null && payload.startsWith("h|")) {
            Consumer<String> c = handOffs;
            if (c != null) {
                c.accept(payload);
            }
            return;
        }
        String own = ownOrigin;
        if (own != null && own.equals(Hint.origin(payload))) {
            return;
        }
        Hint hint = Hint.parse(payload);
        if (hint != null) {
            route(hint, WakeSource.NOTIFICATION);
        }
    }

    /**
     * Wakes for what is claimable now ({@code source}: where the hint came from); tracks the rest, and lease ends
     * even when due (see {@link #fireDue}): when those fire, their wakes count as deadlines.
     */
    private void route(Hint hint, WakeSource source) {
        if (hint.count() > 0 && hint.atMs() <= clock.millis()) {
            registry.wake(hint, null, source);
            return;
        }
        long fireAt = Long.MAX_VALUE;
        deadlineLock.lock();
        try {
            if (deadlines.add(hint)) {
                fireAt = deadlines.earliestMicros();
            }
        } finally {
            deadlineLock.unlock();
        }
        if (fireAt != Long.MAX_VALUE) {
            arm(fireAt);
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
     * Fires due deadlines, never early. A due lease end (count 0) wakes nobody: most leases end in an ack long before
     * their time, and each wake for a gone item costs a claim (two, with its pass-on) per queue and cadence until
     * every stale lease end has passed. It asks for a verification instead, at most one per queue per cadence: the
     * probe, then a timer scan, both read-only, whose answers wake fetches for what is claimable, and the scan's
     * forgets the tracked lease ends it supersedes ({@link #runScans}). Lease ends that come due while a requested
     * verification has not started ride along with it; later ones wait for the next cadence, as lease-end wakes
     * always did.
     */
    private void fireDue() {
        long nowMicros = nowMicros();
        long now = Math.floorDiv(nowMicros, 1000);
        List<Hint> wake = new ArrayList<>();
        long next;
        boolean rescan;
        boolean verify = false;
        deadlineLock.lock();
        try {
            long cadence = settings.wakeCoalescing().toMillis();
            for (Hint h : deadlines.dueMicros(nowMicros)) {
                QueueKind q = h.queue();
                if (h.count() > 0) {
                    wake.add(h);
                } else if (toVerify.containsKey(q)) {
                    toVerify.put(q, sameRoutes(toVerify.get(q), h));
                    verifyAt.merge(q, h.atMs(), Math::max);
                } else if (now - lastVerification.get(q) >= cadence) {
                    lastVerification.put(q, now);
                    toVerify.put(q, h);
                    verifyAt.put(q, h.atMs());
                    verify = true;
                } else {
                    deadlines.add(new Hint(q, lastVerification.get(q) + cadence, 0, h.untagged(), h.tags(),
                            h.sessions(), h.hops()));
                }
            }
            next = deadlines.earliestMicros();
            rescan = deadlines.overflowed();
            if (rescan) {
                deadlines.clearOverflow();
            }
        } finally {
            deadlineLock.unlock();
        }
        for (Hint h : wake) {
            registry.wake(h, null, WakeSource.DEADLINE);
        }
        if (next != Long.MAX_VALUE) {
            arm(next);
        }
        if (rescan) {
            requestScan();
        } else if (verify) {
            startScan();
        }
    }

    /** Most tags a merged lease end names before it stands for any tag. */
    private static final int MAX_MERGED_TAGS = 16;

    /** One lease end whose route accepts whatever either accepts (the earlier time). */
    private static Hint sameRoutes(Hint a, Hint b) {
        Set<String> tags = null;
        if (a.tags() != null && b.tags() != null) {
            tags = new TreeSet<>(a.tags());
            tags.addAll(b.tags());
            if (tags.size() > MAX_MERGED_TAGS) {
                tags = null;
            }
        }
        return new Hint(a.queue(), Math.min(a.atMs(), b.atMs()), 0, a.untagged() || b.untagged(), tags,
                a.sessions() || b.sessions(), 0);
    }

    private void fallbackTick() {
        if (closed.get() || !(registry.anyIdle(QueueKind.ORCHESTRATOR) || registry.anyIdle(QueueKind.WORKER))) {
            return;
        }
        if (!probeRunning.compareAndSet(false, true)) {
            return; // the previous probe is still out; it reports when it returns
        }
        try {
            probes.execute(() -> {
                try {
                    List<Hint> hints = scanner.probe(clock.millis());
                    signals.fallbackPoll();
                    hints.forEach(h -> route(h.queue() == QueueKind.ORCHESTRATOR ? toEveryIdle(h) : h,
                            WakeSource.PROBE));
                } catch (RuntimeException e) {
                    LOG.debug("pgdurable: fallback probe failed", e);
                } finally {
                    probeRunning.set(false);
                }
            });
        } catch (RejectedExecutionException closing) {
            probeRunning.set(false);
        }
    }

    /**
     * An orchestration the probe finds claimable (it skips locked instances) while fetches sit idle was missed by
     * every earlier wake: typically the waiters it reached cannot take it (a dispatcher's version filter, which
     * routes cannot see), and a hint for "one instance" would go to the same oldest waiter again each second while
     * a capable one waits out its poll timeout. So the probe's orchestrator hint reaches every idle waiter, at
     * most once per fallback interval.
     */
    private static Hint toEveryIdle(Hint h) {
        // Marked as passed on already: it reaches every idle fetch, so one that cannot use it has nobody to pass it
        // to, and its failure says nothing about that fetch's own wakes.
        return new Hint(h.queue(), h.atMs(), Integer.MAX_VALUE, h.untagged(), h.tags(), h.sessions(), 1);
    }

    /**
     * Asks for a timer scan. At most one runs at a time; a request while one runs (say, from before a reconnect's
     * LISTEN) schedules a fresh one right after it.
     */
    void requestScan() {
        if (closed.get()) {
            return;
        }
        // Asked after every (re)LISTEN, among others: notifications may have been missed, so no claim is skipped
        // on the strength of what was (not) announced before.
        registry.touchAll();
        if (emptyAt.size() > MAX_CLAIM_KEYS) {
            emptyAt.clear();
        }
        startScan();
    }

    /**
     * A scan without doubting what was announced: a verification of due lease ends is a question about the
     * database, not about missed notifications, so it leaves the skipped-claim memory alone.
     */
    private void startScan() {
        if (closed.get()) {
            return;
        }
        scanPending.set(true);
        if (!scanRunning.compareAndSet(false, true)) {
            return;
        }
        try {
            scans.execute(this::runScans);
        } catch (RejectedExecutionException closing) {
            scanRunning.set(false);
        }
    }

    /**
     * Runs the requested scans one after another. Each scan is a complete account of the database at its snapshot
     * (below the horizon of what it returned, see {@link ScanAnswer}), so it supersedes every lease end tracked
     * before it started: those are forgotten, and the scan's own answer (what is claimable now, the true future
     * lease ends) is routed instead. A lease end offered after the scan started is kept: its claim may have
     * committed after the snapshot. Deadlines are only ever offered after the commit they stand for, so one offered
     * before the mark stands for a commit the scan's snapshot sees.
     *
     * <p>Due lease ends ask the one-statement probe first whether anything is claimable now: it takes a fraction of
     * the scan's time, so a crashed holder's item is not kept waiting. When it found something, its wakes are out and
     * the scan follows a cadence later, so as not to compete with the claims just woken; when it found nothing (the
     * usual answer for stale lease ends), the scan runs at once.
     */
    private void runScans() {
        try {
            while (scanPending.getAndSet(false) && !closed.get()) {
                long mark;
                long askAt = Long.MIN_VALUE;
                Map<QueueKind, Hint> verifying = new EnumMap<>(QueueKind.class);
                deadlineLock.lock();
                try {
                    mark = deadlines.mark();
                    verifying.putAll(toVerify);
                    toVerify.clear();
                    for (long at : verifyAt.values()) {
                        askAt = Math.max(askAt, at);
                    }
                    verifyAt.clear();
                } finally {
                    deadlineLock.unlock();
                }
                if (!verifying.isEmpty() && probeFor(verifying, askAt)) {
                    signals.leaseEndsVerified(0);
                    scanLater();
                    continue;
                }
                long now = clock.millis();
                int limit = settings.maxTrackedDeadlines();
                List<Hint> hints;
                try {
                    hints = scanner.scan(now, limit);
                } catch (RuntimeException e) {
                    LOG.debug("pgdurable: timer scan failed", e);
                    hints = null;
                }
                signals.scanFinished(hints == null);
                if (hints == null) {
                    // Nothing verified them (the probe found nothing, or failed: it cannot tell): the lease ends wake
                    // as they did before verification existed.
                    verifying.values().forEach(h -> registry.wake(h, null, WakeSource.DEADLINE));
                    retryScanLater();
                    continue;
                }
                int dropped = answered(mark, now, limit, hints);
                if (!verifying.isEmpty()) {
                    signals.leaseEndsVerified(dropped);
                }
            }
        } finally {
            scanRunning.set(false);
        }
        if (scanPending.get()) {
            startScan(); // a request raced the end of the loop
        }
    }

    /**
     * The probe's answer for due lease ends: wakes for what is claimable at {@code askAt}, the latest of their times
     * (a due lease end whose item is claimable is among it); true when it found anything. They fire {@code timerLead}
     * early, so the question is usually about the next millisecond: its answer's hints carry that time, and the
     * fetches they wake wait for it before they claim, so nothing is claimed before its lease ended. A count at the
     * cap routes by the items it counted only, so it cannot vouch for a lease-ended item: those lease ends wake a
     * fetch themselves.
     */
    private boolean probeFor(Map<QueueKind, Hint> verifying, long askAt) {
        List<Hint> claimable;
        try {
            claimable = scanner.probe(Math.max(clock.millis(), askAt));
        } catch (RuntimeException e) {
            LOG.debug("pgdurable: lease-end probe failed", e);
            return false;
        }
        for (Hint h : claimable) {
            Hint due = verifying.get(h.queue());
            if (due != null && h.count() >= Hint.SCAN_CAP) {
                registry.wake(due, null, WakeSource.DEADLINE);
            }
        }
        // Woken directly, not routed: a hint for the next millisecond would otherwise be tracked and fire through the
        // timer thread, a hand-off the lead was meant to save.
        claimable.forEach(h -> registry.wake(h, null, WakeSource.PROBE));
        return !claimable.isEmpty();
    }

    /** Forgets what a scan answer supersedes, then routes it; returns how many tracked lease ends were forgotten. */
    private int answered(long mark, long now, int limit, List<Hint> hints) {
        ScanAnswer answer = ScanAnswer.of(now, limit, hints);
        int dropped = 0;
        deadlineLock.lock();
        try {
            for (QueueKind q : QueueKind.values()) {
                dropped += deadlines.dropLeaseEnds(q, mark, answer.horizon(q));
            }
            if (answer.complete()) {
                deadlines.overflowCoveredBy(mark);
            }
        } finally {
            deadlineLock.unlock();
        }
        hints.forEach(h -> route(h, WakeSource.SCAN));
        boolean rescan;
        deadlineLock.lock();
        try {
            rescan = deadlines.overflowed();
            if (rescan) {
                deadlines.clearOverflow();
            }
        } finally {
            deadlineLock.unlock();
        }
        if (rescan) {
            requestScan(); // dropped deadlines the answer did not cover, and nothing left to fire before them
        }
        return dropped;
    }

    /** A scan one cadence from now, without doubting what was announced (see {@link #startScan}). */
    private void scanLater() {
        try {
            timer.schedule(this::startScan, settings.wakeCoalescing().toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            // shutting down
        }
    }

    private void retryScanLater() {
        try {
            timer.schedule(this::requestScan, settings.wakeCoalescing().toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            // shutting down
        }
    }

    /** Parked fetches return empty at once; the listener and every thread stop within about two seconds. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        registry.close();
        timer.shutdownNow();
        scans.shutdownNow();
        probes.shutdownNow();
        notifier.close();
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
