package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.LongPollView;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Lets a fetch park until work is claimable. Hints arrive from the listener (NOTIFY), from local deadlines (delayed
 * visibility, lease ends), from timer scans (after every (re)LISTEN, periodically, after deadline overflow) and from
 * a one-second fallback probe that runs whenever fetches wait, whatever the listener and the scans are doing.
 * A hint wakes about one matching waiter per announced item; the woken fetch asks the database, which decides.
 * A lease end that comes due wakes nobody by itself: read-only questions first ask whether anything became
 * claimable (most leases end in an ack long before their time, and a claim for a gone item is a wasted write).
 *
 * <p>It never claims work itself and never builds SQL: the provider hands it the claim to retry and a
 * {@link WorkScanner} for its read-only questions. It builds its parts and hands each job to one: a fetch to
 * {@link ParkedFetch}, hints to {@link DeadlineTimer}, due lease ends to {@link LeaseEndVerification}, timer scans to
 * {@link ScanScheduler}, the fallback to {@link FallbackProbe}, the listener session to {@link Notifier}.
 */
public final class LongPoller implements AutoCloseable {
    /** The tunables, validated by the provider's configuration. */
    public record Settings(Duration fallbackInterval, Duration wakeCoalescing, Duration recoveryScanInterval,
                           int maxParkedWaiters, Duration heartbeat, int maxTrackedDeadlines, Duration timerLead) {}

    private final Settings settings;
    private final WaiterRegistry registry;
    private final Notifier notifier;
    private final ScheduledExecutorService timer;
    private final DeadlineTimer deadlines;
    private final ScanScheduler scans;
    private final FallbackProbe fallback;
    private final ParkedFetch fetches;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongPollView view = new View();
    private volatile String ownOrigin;
    /** Hand-over across processes: where items another process handed to this one go. */
    private volatile Consumer<String> handOffs;
    private volatile Runnable arrivals;
    private volatile Runnable joined;

    public LongPoller(Settings settings, Clock clock, WorkScanner scanner, NotificationListener listener,
                      String channel, LongPollSignals signals) {
        this.settings = settings;
        this.registry = new WaiterRegistry(settings.maxParkedWaiters(), signals);
        this.timer = Executors.newSingleThreadScheduledExecutor(daemon("pgdurable-longpoll-timer-" + channel));
        this.notifier = new Notifier(listener, channel, settings.heartbeat(), this::onNotification,
                this::listening, signals);
        this.fetches = new ParkedFetch(registry, signals, clock, settings, notifier::isListening, closed::get);
        LeaseEndVerification verification = new LeaseEndVerification(scanner, registry, clock,
                settings.wakeCoalescing().toMillis());
        // The timer asks for scans and the scans route their answers through the timer: the coordinator ties them.
        this.deadlines = new DeadlineTimer(clock, registry, timer, settings, verification, this::requestScan,
                this::verifyLeaseEnds);
        this.scans = new ScanScheduler(scanner, clock, signals, settings, deadlines, verification,
                fetches::doubtAnnouncements, timer,
                Executors.newSingleThreadExecutor(daemon("pgdurable-longpoll-scan-" + channel)), closed::get);
        this.fallback = new FallbackProbe(scanner, registry, deadlines, clock, signals,
                Executors.newSingleThreadExecutor(daemon("pgdurable-longpoll-probe-" + channel)), closed::get);
    }

    public void start() {
        notifier.start();
        long fallbackMs = settings.fallbackInterval().toMillis();
        timer.scheduleWithFixedDelay(fallback::tick, fallbackMs, fallbackMs, TimeUnit.MILLISECONDS);
        long recovery = settings.recoveryScanInterval().toMillis();
        timer.scheduleWithFixedDelay(this::requestScan, recovery, recovery, TimeUnit.MILLISECONDS);
    }

    /** What metrics, the benchmark and tests may read of this poller, and nothing else. */
    public LongPollView view() {
        return view;
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
        return deadlines.size();
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
        return fetches.run(queue, route, claimKey, takes, pollTimeout, operation, visibleBy -> claim.get(), false);
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
        return fetches.run(queue, route, claimKey, takes, pollTimeout, operation, claim, true);
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
        deadlines.route(hint, WakeSource.ANNOUNCEMENT);
    }

    /**
     * After LISTEN (again): the catch-up scan, a new liveness key for whoever counts the takers, and this process's
     * arrival told to the others (their announcers may have stopped sending for want of listeners).
     */
    private void listening() {
        Runnable joined = this.joined;
        if (joined != null) {
            joined.run();
        }
        requestScan();
        registry.recountTakers();
    }

    /**
     * The announcer's side of knowing who listens: {@code arrivals} runs for every join notification of another
     * process ({@link Hint#JOIN_PREFIX}; this one's own echo is dropped with its other payloads), on the listener's
     * thread; {@code joined} runs whenever this process's own listener (re)connected, before the catch-up scan, on the
     * listener's thread (and here, when it listens already).
     */
    public void audience(Runnable arrivals, Runnable joined) {
        this.arrivals = arrivals;
        this.joined = joined;
        if (notifier.isListening()) {
            joined.run(); // it listened before anyone asked
        }
    }

    /** The server process id of the listener's session, which holds the channel's listener lock; 0 when none. */
    public int listenerPid() {
        return notifier.listenerPid();
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
        if (payload != null && payload.startsWith(Hint.JOIN_PREFIX)) {
            Runnable r = arrivals;
            if (r != null) {
                r.run();
            }
            return;
        }
        Hint hint = Hint.parse(payload);
        if (hint != null) {
            deadlines.route(hint, WakeSource.NOTIFICATION);
        }
    }

    /** Asks for a timer scan, doubting what was announced (see {@link ScanScheduler#requestScan}). */
    private void requestScan() {
        scans.requestScan();
    }

    /** A scan that verifies due lease ends (see {@link ScanScheduler#startScan}). */
    private void verifyLeaseEnds() {
        scans.startScan();
    }

    /** Parked fetches return empty at once; the listener and every thread stop within about two seconds. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        registry.close();
        timer.shutdownNow();
        scans.close();
        fallback.close();
        notifier.close();
    }

    /** The read-only view: a separate object, so a reader cannot reach the poller by a cast. */
    private final class View implements LongPollView {
        @Override
        public boolean isListening() {
            return LongPoller.this.isListening();
        }

        @Override
        public int parkedFetches() {
            return waiting();
        }

        @Override
        public int parkedFetches(QueueKind queue) {
            return waiting(queue);
        }

        @Override
        public int trackedDeadlines() {
            return LongPoller.this.trackedDeadlines();
        }

        @Override
        public long wakesIssued() {
            return LongPoller.this.wakesIssued();
        }
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
