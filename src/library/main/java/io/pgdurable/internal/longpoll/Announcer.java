package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells waiters what a committed write made claimable: this process's own waiters at once (no round trip), every
 * other process by NOTIFY, sent from one background thread in short transactions of their own.
 *
 * <p>Why not from the writing transaction (a trigger): PostgreSQL serialises the commits of notifying transactions
 * database-wide, each holding the lock until its commit record is on disk, so notifying inside every enqueue, claim
 * and ack turns group commit off (measured: 0.40x the enqueue throughput). A transaction that only notifies writes
 * nothing to disk and holds that lock for microseconds; batching the hints queued meanwhile into one such
 * transaction keeps it to a handful per second under load.
 *
 * <p>The price: a process that dies between its commit and the announcement leaves the hint unsent; other
 * processes then find the work with their one-second fallback probe. Announcements are advice, never the record.
 * An idle announcer narrows that window further: it hands a lone write's payloads back for the write's own
 * statement ({@link #inlinePayloads}), so they commit with the data.
 */
public final class Announcer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Announcer.class);

    /** Sends notification payloads on the task hub's channel, in one transaction. Implemented by the provider. */
    @FunctionalInterface
    public interface Sender {
        void send(List<String> payloads) throws Exception;
    }

    /**
     * Whether any process but this one listens on the task hub's channel right now (holds the channel's listener
     * lock, {@link NotifyChannel#listenerLockKeys}). Implemented by the provider; asked on the announcer's thread.
     */
    @FunctionalInterface
    public interface Audience {
        boolean othersListening() throws Exception;
    }

    /** While nobody else listens, writes that drop their hints ask again at most this often. */
    static final long ALONE_RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /** While others listen, a send asks again at most this often (to stop sending once they are gone). */
    static final long HEARD_RECHECK_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int UNKNOWN = 0;
    private static final int HEARD = 1;
    private static final int ALONE = 2;

    /** Hints waiting to be sent, at most this many; beyond it one "anything" hint per queue stands for the rest. */
    static final int MAX_PENDING = 4096;
    /** Payloads per notifying transaction. */
    static final int MAX_PER_SEND = 512;
    /**
     * How long hints about the future (lease ends, delayed items) may wait for company before they are sent: they
     * matter to other processes only when their time comes, and under load most of them would otherwise each take
     * a notifying transaction of their own. Hints due sooner than twice this go out at once, and take the waiting
     * ones with them.
     */
    public static final long LINGER_MS = 100;
    /**
     * At most one notifying transaction per this interval, even for urgent hints: under load the hints of the
     * writes committed meanwhile share the next one (each notifying transaction is a round trip, a turn on
     * PostgreSQL's notify lock and a delivery to every listener); an announcer that was idle sends at once.
     * Measured with {@code bench --scenarios notify-overhead} on PostgreSQL 15, enqueue throughput announcing ÷ not:
     * 0.84–0.89 at 1 or 2 ms (with or without merging due hints), 0.95 at 4 ms with due hints merged.
     */
    static final long MIN_SEND_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(4);
    private static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final long MAX_BACKOFF_MS = 1000;

    private final String origin;
    private final Clock clock;
    private final LongPoller local;
    private final Sender sender;
    private final BooleanSupplier activated;
    private final long recheckNanos;
    private volatile boolean remote;
    private volatile long checkedAtNanos;
    private boolean recheckDue;
    /** Null: always send. */
    private final Audience audience;
    /** {@link #UNKNOWN}, {@link #HEARD} or {@link #ALONE}: what the last look at the listeners found. */
    private volatile int heard = UNKNOWN;
    private volatile long heardCheckedNanos = System.nanoTime();
    /** Guarded by {@link #lock}: ask who listens before the next send. */
    private boolean audienceDue;
    /** Guarded by {@link #lock}: this process's listener (re)connected; tell the others with the next send. */
    private boolean joinDue;
    private final LongPollSignals signals;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition pendingOrClosed = lock.newCondition();
    /**
     * Hints not sent yet, merged by everything but their count: identical payloads in one transaction would be
     * collapsed into one by PostgreSQL, and two items announced as one would wake one waiter instead of two.
     */
    private final Map<Hint, Hint> pending = new LinkedHashMap<>();
    private boolean overflowed;
    /**
     * Per queue (by ordinal), the latest future lease end told to other processes. A later lease end need not be
     * told while that one is still ahead: when it comes due there, the receiver asks the database (a probe, then a
     * timer scan, see LongPoller), whose answer tracks every lease end still live, this later one included. Under
     * load this turns one payload per claim time into about one per lease time. Guarded by {@link #lock}.
     */
    private final long[] leaseEndTold = {Long.MIN_VALUE, Long.MIN_VALUE};
    /** A pending hint is due within {@code 2 * LINGER_MS}: send without lingering. */
    private boolean urgent;
    /** When the oldest pending hint was queued (System.nanoTime), meaningful while {@link #pending} is not empty. */
    private long oldestPendingNanos;
    /** When the last send started (System.nanoTime); written by the sending thread only. */
    private volatile long lastSendNanos = System.nanoTime() - MIN_SEND_INTERVAL_NANOS;
    /** When payloads were last handed out to travel inside a write (System.nanoTime); guarded by {@link #lock}. */
    private long lastInlineNanos = System.nanoTime() - MIN_SEND_INTERVAL_NANOS;
    private boolean closed;
    private final Thread thread;
    private long lastWarnNanos = System.nanoTime() - WARN_INTERVAL_NANOS;
    private int suppressedFailures;

    /** A fresh origin: eight lowercase hexadecimal digits naming one announcer in its payloads. */
    public static String newOrigin() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    /** An announcer with an origin of its own; see the full constructor. */
    public Announcer(LongPoller local, Sender sender, BooleanSupplier activated, Duration recheck, String channel,
                     LongPollSignals signals, Clock clock) {
        this(newOrigin(), local, sender, activated, recheck, null, channel, signals, clock);
    }

    /**
     * @param origin    names this announcer in its payloads, so its own listener ignores their echo
     * @param local     this process's long poller, or null (a short-polling provider announces for others only)
     * @param sender    the provider's NOTIFY statement
     * @param activated whether the schema is activated (hints go to other processes only then), re-read at most
     *                  every {@code recheck} while it says no; null: always send (a long-polling provider, which
     *                  only starts on an activated schema)
     * @param audience  whether another process listens: hints nobody else could hear are not sent
     *                  (docs/long-polling.md, "Announcing only to listeners"); null: always send
     */
    public Announcer(String origin, LongPoller local, Sender sender, BooleanSupplier activated, Duration recheck,
                     Audience audience, String channel, LongPollSignals signals, Clock clock) {
        this.origin = origin;
        this.clock = clock;
        this.local = local;
        this.sender = Objects.requireNonNull(sender, "sender");
        this.activated = activated;
        this.audience = audience;
        this.recheckNanos = recheck == null ? Long.MAX_VALUE : recheck.toNanos();
        this.signals = signals == null ? LongPollSignals.NONE : signals;
        this.remote = activated == null || activated.getAsBoolean();
        this.checkedAtNanos = System.nanoTime();
        if (local != null) {
            local.ignoreOrigin(origin);
            local.audience(this::arrived, this::joinedHere);
        }
        thread = new Thread(this::run, "pgdurable-announcer-" + channel);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Announces hints of a write that has committed at application time {@code nowMs} (the time the operation
     * passed to SQL: the caller's thread reads the clock once per operation). Never blocks on the database; never
     * throws.
     */
    public void announce(Collection<Hint> hints, long nowMs) {
        wakeHere(hints, nowMs);
        tellOthers(hints, nowMs);
    }

    /**
     * The payloads of a write's hints, for the writer to send inside its own transaction (one more expression in the
     * same statement: no extra round trip, delivered at its commit), or null: announce after the commit as usual.
     *
     * <p>Given only while this announcer is idle (nothing pending, nothing sent or handed out within
     * {@link #MIN_SEND_INTERVAL_NANOS}) and only for hints that are all due: then the write is alone, so the
     * notifying commit waits on no other notifying commit (the serialisation that makes notifying inside every write
     * costly under load, see the class comment), and the wake of another process skips the hand-off to the sending
     * thread and that thread's own round trip. Under load the next write within the interval takes the usual path,
     * whose sends carry the hints of many writes. Handing payloads out counts as a send for the spacing. The caller
     * must still {@link #wakeHere} after its commit; on a failed write nothing was sent, as nothing was committed.
     */
    public List<String> inlinePayloads(Collection<Hint> hints, long nowMs) {
        if (!remote || hints.isEmpty() || (audience != null && heard == ALONE)) {
            return null;
        }
        for (Hint h : hints) {
            if (h.atMs() > nowMs) {
                return null;
            }
        }
        if (System.nanoTime() - lastSendNanos < MIN_SEND_INTERVAL_NANOS) {
            return null; // the sender is busy: under load every write but one per interval ends here, without the lock
        }
        lock.lock();
        try {
            long now = System.nanoTime();
            if (closed || !pending.isEmpty() || overflowed || now - lastSendNanos < MIN_SEND_INTERVAL_NANOS
                    || now - lastInlineNanos < MIN_SEND_INTERVAL_NANOS) {
                return null;
            }
            lastInlineNanos = now;
            if (audience != null && heard == UNKNOWN && !audienceDue) {
                audienceDue = true; // nobody asked yet: the sending thread asks, so a lone writer stops notifying
                pendingOrClosed.signal();
            }
        } finally {
            lock.unlock();
        }
        List<String> payloads = new ArrayList<>(hints.size());
        for (Hint h : hints) {
            payloads.add(h.payload(origin));
        }
        signals.announcedInline(payloads.size());
        return payloads;
    }

    /** The local half of {@link #announce(Collection, long)}: this process's waiters only. */
    public void wakeHere(Collection<Hint> hints, long nowMs) {
        if (local != null) {
            for (Hint h : hints) {
                local.offer(h, nowMs);
            }
        }
    }

    /** The other half of {@link #announce(Collection, long)}: other processes only, by NOTIFY. */
    public void tellOthers(Collection<Hint> hints, long nowMs) {
        if (hints.isEmpty()) {
            return;
        }
        if (!remote) {
            if (activated != null && System.nanoTime() - checkedAtNanos >= recheckNanos) {
                checkedAtNanos = System.nanoTime();
                lock.lock();
                try {
                    recheckDue = true;
                    pendingOrClosed.signal();
                } finally {
                    lock.unlock();
                }
            }
            return;
        }
        if (audience != null && heard == ALONE) {
            if (System.nanoTime() - heardCheckedNanos >= ALONE_RECHECK_NANOS) {
                lock.lock();
                try {
                    audienceDue = true;
                    pendingOrClosed.signal();
                } finally {
                    lock.unlock();
                }
            }
            return; // nobody else would hear it
        }
        lock.lock();
        try {
            if (closed) {
                return;
            }
            boolean wasEmpty = pending.isEmpty();
            boolean wasUrgent = urgent;
            boolean wasOverflowed = overflowed;
            if (wasEmpty) {
                oldestPendingNanos = System.nanoTime();
            }
            long soon = nowMs + 2 * LINGER_MS;
            int queued = 0;
            for (Hint h : hints) {
                if (h.count() == 0 && h.atMs() > nowMs) {
                    int q = h.queue().ordinal();
                    if (leaseEndTold[q] > nowMs && leaseEndTold[q] <= h.atMs()) {
                        continue;
                    }
                    leaseEndTold[q] = h.atMs();
                }
                urgent |= h.atMs() <= soon;
                queued++;
                Hint key = mergeKey(h, h.atMs());
                if (pending.size() < MAX_PENDING || pending.containsKey(key)) {
                    pending.merge(key, new Hint(h.queue(), h.atMs(), h.count(), h.untagged(), h.tags(), h.sessions(),
                            0), Announcer::addCounts);
                } else {
                    overflowed = true;
                }
            }
            // Only a change of what the sender waits for wakes it: under load it is already timed to the next send,
            // and a wake-up per announced write (a context switch each) cost measurable throughput on 2 cores.
            if (wasEmpty || (urgent && !wasUrgent) || (overflowed && !wasOverflowed)) {
                pendingOrClosed.signal();
            }
            if (queued > 0) {
                signals.announcementsQueued(queued);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Hints waiting for the sending thread right now (merged ones count once), for a backlog gauge. */
    public int pending() {
        lock.lock();
        try {
            return pending.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * What hints merge by: their route and time, and whether they announce items or a lease end (count 0, kept
     * apart from items at the same time); never their count.
     */
    private static Hint mergeKey(Hint h, long atMs) {
        return new Hint(h.queue(), atMs, Math.min(1, h.count()), h.untagged(), h.tags(), h.sessions(), 0);
    }

    /** Two due hints of one route as one, at the later of their times. */
    private static Hint mergeDue(Hint a, Hint b) {
        Hint sum = addCounts(a, b);
        return new Hint(a.queue(), Math.max(a.atMs(), b.atMs()), sum.count(), a.untagged(), a.tags(), a.sessions(), 0);
    }

    /** Two pending hints of one key as one: items add up; lease ends (count 0) stay one. */
    private static Hint addCounts(Hint a, Hint b) {
        return a.count() == 0 ? a : new Hint(a.queue(), a.atMs(),
                (int) Math.min(Integer.MAX_VALUE, (long) a.count() + b.count()), a.untagged(), a.tags(), a.sessions(),
                0);
    }

    /** One hint; see {@link #announce(Collection, long)}. */
    public void announce(Hint hint, long nowMs) {
        announce(List.of(hint), nowMs);
    }

    private void run() {
        long backoffMs = 0;
        List<String> batch = new ArrayList<>();
        while (true) {
            boolean last;
            boolean recheck;
            boolean askAudience;
            boolean join;
            lock.lock();
            try {
                // A failed batch retries at once.
                while (batch.isEmpty() && !overflowed && !closed && !recheckDue && !audienceDue && !joinDue) {
                    if (pending.isEmpty()) {
                        pendingOrClosed.await(1, TimeUnit.SECONDS);
                        continue;
                    }
                    long now = System.nanoTime();
                    long lingered = now - oldestPendingNanos;
                    long linger = TimeUnit.MILLISECONDS.toNanos(LINGER_MS);
                    long spacing = Math.max(lastSendNanos, lastInlineNanos) + MIN_SEND_INTERVAL_NANOS - now;
                    if ((urgent || lingered >= linger) && spacing <= 0) {
                        break;
                    }
                    pendingOrClosed.awaitNanos(urgent || lingered >= linger ? spacing : linger - lingered);
                }
                last = closed;
                recheck = recheckDue;
                recheckDue = false;
                askAudience = audienceDue;
                audienceDue = false;
                join = joinDue;
                joinDue = false;
                if (batch.isEmpty()) {
                    takeBatch(batch);
                }
            } catch (InterruptedException e) {
                return; // close() gave up waiting for the final send
            } finally {
                lock.unlock();
            }
            if (recheck && !last) {
                try {
                    remote = activated.getAsBoolean();
                } catch (RuntimeException e) {
                    LOG.debug("pgdurable: could not read whether the schema is activated", e);
                }
            }
            if (audience != null && !last) {
                keepOnlyWhatIsHeard(batch, askAudience);
            }
            if (join) {
                batch.add(Hint.JOIN_PREFIX + origin);
            }
            if (!batch.isEmpty()) {
                try {
                    lastSendNanos = System.nanoTime();
                    sender.send(batch);
                    signals.announced(batch.size());
                    batch.clear();
                    backoffMs = 0;
                    succeeded();
                } catch (Exception e) {
                    signals.announceFailed(batch.size());
                    failed(e);
                    if (last) {
                        return;
                    }
                    backoffMs = backoffMs == 0 ? 50 : Math.min(MAX_BACKOFF_MS, backoffMs * 2);
                    if (!pause(backoffMs)) {
                        return;
                    }
                    continue; // the same batch again: dropping it would cost other processes up to a fallback
                }
            }
            if (last) {
                return;
            }
        }
    }

    /**
     * Empties {@code batch} when nobody else listens, asking first when told to, when nobody has asked yet, or when
     * the last answer is old. The join payload is added after this, so it always goes out.
     */
    private void keepOnlyWhatIsHeard(List<String> batch, boolean ask) {
        long now = System.nanoTime();
        int h = heard;
        if (ask || (!batch.isEmpty() && (h == UNKNOWN || now - heardCheckedNanos >= (h == HEARD
                ? HEARD_RECHECK_NANOS : ALONE_RECHECK_NANOS)))) {
            try {
                h = audience.othersListening() ? HEARD : ALONE;
            } catch (Exception e) {
                h = HEARD; // unknown: sending costs a transaction, not sending may cost another process a second
                LOG.debug("pgdurable: could not read who listens", e);
            }
            heard = h;
            heardCheckedNanos = now;
        }
        if (h == ALONE && !batch.isEmpty()) {
            signals.announcementsUnheard(batch.size());
            batch.clear();
        }
    }

    /** Another process began to listen (its join notification). */
    private void arrived() {
        heardCheckedNanos = System.nanoTime();
        heard = HEARD;
    }

    /**
     * This process's listener (re)connected: tells the others at once, on the listener's thread, before the catch-up
     * scan that follows (so a fetch of this process parks after the others know of it); a failed send is left to the
     * sending thread, which retries it with the next batch.
     */
    private void joinedHere() {
        try {
            sender.send(List.of(Hint.JOIN_PREFIX + origin));
        } catch (Exception e) {
            LOG.debug("pgdurable: could not tell other processes that this one listens; retrying", e);
            lock.lock();
            try {
                joinDue = true;
                pendingOrClosed.signal();
            } finally {
                lock.unlock();
            }
        }
    }

    private void takeBatch(List<String> batch) {
        if (overflowed) {
            // Hints were dropped: one open-ended hint per queue makes every process look, now.
            long now = clock.millis();
            batch.add(Hint.anything(QueueKind.ORCHESTRATOR, now, Hint.SCAN_CAP).payload(origin));
            batch.add(Hint.anything(QueueKind.WORKER, now, Hint.SCAN_CAP).payload(origin));
            overflowed = false;
        }
        // Hints already due are merged across their times: a receiver wakes for any hint at or before its clock,
        // and each payload is a delivery that every listening backend and client must handle.
        long nowMs = clock.millis();
        Map<Hint, Hint> due = new LinkedHashMap<>();
        var it = pending.values().iterator();
        while (it.hasNext() && batch.size() + due.size() < MAX_PER_SEND) {
            Hint h = it.next();
            it.remove();
            if (h.atMs() <= nowMs) {
                due.merge(mergeKey(h, 0), h, Announcer::mergeDue);
            } else {
                batch.add(h.payload(origin));
            }
        }
        for (Hint h : due.values()) {
            batch.add(h.payload(origin));
        }
        urgent = !pending.isEmpty(); // a backlog beyond one send goes out without lingering
        oldestPendingNanos = System.nanoTime();
    }

    /** Waits on the condition (not a sleep) so close() cuts a backoff short. */
    private boolean pause(long ms) {
        lock.lock();
        try {
            long nanos = TimeUnit.MILLISECONDS.toNanos(ms);
            while (nanos > 0 && !closed) {
                nanos = pendingOrClosed.awaitNanos(nanos);
            }
            return true;
        } catch (InterruptedException e) {
            return false;
        } finally {
            lock.unlock();
        }
    }

    private void succeeded() {
        if (suppressedFailures > 0) {
            LOG.info("pgdurable: announcements are sent again ({} failed attempts since the last report)",
                    suppressedFailures);
            suppressedFailures = 0;
        }
    }

    private void failed(Exception e) {
        long now = System.nanoTime();
        if (now - lastWarnNanos >= WARN_INTERVAL_NANOS) {
            lastWarnNanos = now;
            LOG.warn("pgdurable: could not send wake-up announcements (retrying; other processes fall back to their "
                    + "one-second probe meanwhile; {} more failures since the last report): {}", suppressedFailures,
                    e.toString());
            suppressedFailures = 0;
        } else {
            suppressedFailures++;
            LOG.debug("pgdurable: announcement failed", e);
        }
    }

    /** Sends what is pending (waiting up to about a second for it), then stops. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            pendingOrClosed.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            thread.join(1000);
            if (thread.isAlive()) {
                thread.interrupt();
            }
        } catch (InterruptedException e) {
            thread.interrupt();
            Thread.currentThread().interrupt();
        }
    }
}
