package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.Reservation;
import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parked side of the hand-over across processes (docs/long-polling.md "Hand-over across processes"): keeps this
 * provider's row in {@code parked_fetches} — how many of its fetches are parked for untagged items without a session,
 * the lock time they take, the listener's liveness key — and gives the items other processes hand it to those
 * fetches, or back to the queue when none is left for one.
 *
 * <p>The listener's thread only delivers (a reservation and a hand-off, no statement). One daemon thread,
 * {@code pgdurable-takers-<schema>}, holds the items delivered for their fetches' lock times at once (the enqueue
 * leased each for {@link OfferedWrites#OFFERED_LEASE_MS} only, so that an item nobody heard is soon claimable again),
 * writes the account once a change settled ({@link #SETTLE_NANOS}: a fetch that returns and parks again changes
 * nothing; a fall below the row's count rests {@link #FALL_SETTLE_NANOS}) and only when it differs from what the row
 * says, and sends the releases. An idle provider whose fetches stay parked therefore writes nothing.
 */
final class RemoteHandOver implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteHandOver.class);
    /** How long a change of the parked fetches must rest before it is written. */
    static final long SETTLE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * How long a fall of the count below what the row says must rest before it is written. A row that says too few
     * sends another process's item the claim path, so a rise is written at once; a row that says too many costs only a
     * give-back when another process's item arrives meanwhile. A busy process whose fetches come and go therefore
     * writes almost nothing: its row settles at what its parked fetches usually are.
     */
    static final long FALL_SETTLE_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** A failed hold is retried this soon: the items' short leases are running. */
    private static final long HOLD_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * Delivered items wait this long before their hold is sent: the thread and its statement stay off the moment their
     * fetches return (they would compete for the processor with the callers just woken), and items delivered close
     * together share one statement. Negligible next to the offered lease.
     */
    static final long HOLD_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    private static final long IDLE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long CLOSE_WAIT_MILLIS = 1_000;

    /** What the row says: the liveness key, how many fetches wait, and the lock time they take. */
    private record Account(long livenessKey, int waiting, long lockMs) {
    }

    /** An item delivered to a fetch whose lease, held only briefly by the enqueue, must reach {@code untilMs}. */
    private record Hold(String token, long untilMs) {
    }

    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final LongPoller poller;
    private final Leases leases;
    private final String origin;
    private final BiConsumer<List<Hint>, Long> announce;
    private final LongPollSignals signals;
    private final Thread thread;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Guarded by lock.
    private boolean dirty = true;
    private boolean closed;
    private final ArrayDeque<String> releases = new ArrayDeque<>();
    private final ArrayDeque<Hold> holds = new ArrayDeque<>();
    /** When the oldest queued hold is due ({@link System#nanoTime()}); meaningful while {@link #holds} is not empty. */
    private long holdsDueNanos;
    private Account written;
    // Touched by the thread only.
    private long lastWarnNanos;
    private int failuresSinceWarn;

    RemoteHandOver(SqlRunner db, Statements sql, Clock clock, LongPoller poller, Leases leases, String origin,
                   String schema, BiConsumer<List<Hint>, Long> announce, LongPollSignals signals) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.poller = poller;
        this.leases = leases;
        this.origin = origin;
        this.announce = announce;
        this.signals = signals;
        this.thread = new Thread(this::run, "pgdurable-takers-" + schema);
        this.thread.setDaemon(true);
    }

    void start() {
        poller.handOverAcrossProcesses(this::takersChanged, this::received);
        thread.start();
    }

    private void takersChanged() {
        lock.lock();
        try {
            dirty = true;
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A hand-off notification, {@code h|origin|token|lock ms|leased until ms|held until ms|item}, on the listener's
     * thread: the item goes to a parked fetch of ours that takes it with that lock time, or back to the queue.
     */
    private void received(String payload) {
        String[] f = payload.split("\\|", 7);
        if (f.length != 7 || !origin.equals(f[1])) {
            return; // another process's item, or not one of ours
        }
        String token = f[2];
        long lockMs;
        long until;
        long heldUntil;
        WorkItem item;
        try {
            lockMs = Long.parseLong(f[3]);
            until = Long.parseLong(f[4]);
            heldUntil = Long.parseLong(f[5]);
            item = WorkItem.fromJson(f[6]);
        } catch (RuntimeException undecodable) {
            giveBack(token); // a claim decodes it again, and counts it if it still fails
            return;
        }
        lock.lock();
        try {
            if (written != null && written.waiting() > 0) {
                // The enqueue took one off the row; the fetch that ends now is not a change to write.
                written = new Account(written.livenessKey(), written.waiting() - 1, written.lockMs());
            }
        } finally {
            lock.unlock();
        }
        if (item instanceof WorkItem.ActivityExecute a) {
            Reservation r = poller.reserve(QueueKind.WORKER,
                    t -> t instanceof HandOver.Taker k && k.fits(a) && k.claim().lockMs() == lockMs);
            if (r != null && r.handOver(new FetchedWorkItem(a, token, 1))) {
                if (heldUntil < until) {
                    hold(new Hold(token, until));
                }
                signals.handOffReceived(true);
                announce.accept(((HandOver.Taker) r.takes()).claim().leaseHints(until - lockMs, List.of(a)),
                        clock.millis());
                return;
            }
        }
        giveBack(token);
    }

    private void hold(Hold h) {
        lock.lock();
        try {
            if (holds.isEmpty()) {
                holdsDueNanos = System.nanoTime() + HOLD_DELAY_NANOS;
            }
            holds.add(h);
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Whether queued holds are due (all are once closing). Called with {@link #lock} held. */
    private boolean holdsDue() {
        return !holds.isEmpty() && (closed || System.nanoTime() - holdsDueNanos >= 0);
    }

    private void giveBack(String token) {
        signals.handOffReceived(false);
        lock.lock();
        try {
            releases.add(token);
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        while (true) {
            List<String> toRelease;
            List<Hold> toHold;
            boolean recount;
            lock.lock();
            try {
                long idleUntil = System.nanoTime() + IDLE_WAIT_NANOS;
                while (!closed && !dirty && releases.isEmpty() && !holdsDue()) {
                    long left = (holds.isEmpty() ? idleUntil : holdsDueNanos) - System.nanoTime();
                    if (left <= 0 && holds.isEmpty()) {
                        break;
                    }
                    changed.awaitNanos(Math.max(1, left));
                }
                toRelease = new ArrayList<>(releases);
                releases.clear();
                toHold = new ArrayList<>();
                if (holdsDue()) {
                    toHold.addAll(holds);
                    holds.clear();
                }
                recount = dirty && !closed;
                if (closed && toRelease.isEmpty() && toHold.isEmpty()) {
                    return;
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            if (!toHold.isEmpty()) {
                holdFor(toHold);
            }
            for (String token : toRelease) {
                leases.releaseRefusedHandOver(token);
            }
            if (recount && settle()) {
                Account now = count();
                if (fallen(now) && !restedFor(FALL_SETTLE_NANOS)) {
                    takersChanged(); // counted again once it rests, or when it changes
                } else if (!writeAccount(now)) {
                    pause(RETRY_NANOS);
                }
            }
        }
    }

    /**
     * Extends the short leases of delivered items to their fetches' lease ends, in one statement. When it fails, the
     * items whose lease end has not passed are queued again, due {@link #HOLD_RETRY_NANOS} later (the statement is
     * harmless for any of them that was acked, released or claimed by another token since).
     */
    private void holdFor(List<Hold> items) {
        String[] tokens = new String[items.size()];
        Long[] until = new Long[items.size()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = items.get(i).token();
            until[i] = items.get(i).untilMs();
        }
        try {
            db.run("holdHandedOverItems", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.holdHandedOverItems)) {
                    ps.setArray(1, c.createArrayOf("text", tokens));
                    ps.setArray(2, c.createArrayOf("bigint", until));
                    ps.setLong(3, clock.millis());
                    ps.execute();
                    return null;
                }
            });
        } catch (RuntimeException e) {
            warn("could not hold the items other processes handed to this one for their fetches' lock times; "
                    + "retrying, their short leases may end first", e);
            long now = clock.millis();
            lock.lock();
            try {
                if (holds.isEmpty()) {
                    holdsDueNanos = System.nanoTime() + HOLD_RETRY_NANOS;
                }
                for (Hold h : items) {
                    if (h.untilMs() > now && !closed) {
                        holds.add(h);
                    }
                }
            } finally {
                lock.unlock();
            }
            return;
        }
        failuresSinceWarn = 0;
        signals.handOffsHeld(items.size());
    }

    /** Waits until the takers rested for {@link #SETTLE_NANOS}; false when closing. */
    private boolean settle() {
        lock.lock();
        try {
            do {
                dirty = false;
                long wait = SETTLE_NANOS;
                while (!closed && !dirty && wait > 0) {
                    wait = changed.awaitNanos(wait);
                }
            } while (dirty && !closed);
            return !closed;
        } catch (InterruptedException e) {
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Writes the account if it differs from the row's; false when the write failed (it is retried). */
    /**
     * Whether {@code now} says fewer takers than the row, on the same liveness key: none at all, or fewer with the same
     * lock time.
     */
    private boolean fallen(Account now) {
        lock.lock();
        try {
            return written != null && now.livenessKey() == written.livenessKey() && now.waiting() < written.waiting()
                    && (now.waiting() == 0 || now.lockMs() == written.lockMs());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits {@code nanos} for the takers to stay as they are; false when they changed, the thread has items to hold
     * or release meanwhile, or it is closing.
     */
    private boolean restedFor(long nanos) {
        lock.lock();
        try {
            long deadline = System.nanoTime() + nanos;
            while (!closed && !dirty && releases.isEmpty() && !holdsDue()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return true;
                }
                changed.awaitNanos(Math.max(1, holds.isEmpty() ? left
                        : Math.min(left, holdsDueNanos - System.nanoTime())));
            }
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
        }
    }

    private boolean writeAccount(Account now) {
        lock.lock();
        try {
            if (now.equals(written) || written == null && now.waiting() == 0) {
                return true;
            }
        } finally {
            lock.unlock();
        }
        try {
            db.run("registerParkedFetches", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.registerParkedFetches)) {
                    ps.setString(1, origin);
                    ps.setLong(2, now.livenessKey());
                    ps.setInt(3, now.waiting());
                    ps.setLong(4, now.lockMs());
                    ps.setLong(5, clock.millis());
                    ps.execute();
                    return null;
                }
            });
        } catch (RuntimeException e) {
            warn("could not write this process's parked fetches for hand-over across processes; other processes "
                    + "announce their items instead", e);
            takersChanged();
            return false;
        }
        lock.lock();
        try {
            written = now;
        } finally {
            lock.unlock();
        }
        failuresSinceWarn = 0;
        signals.takersRegistered(now.waiting());
        return true;
    }

    /**
     * The parked fetches that take an untagged item without a session, with the lock time of the oldest (another
     * process leases for that time, so only those fetches count); none while the listener is down, as nobody would
     * hear a hand-off.
     */
    private Account count() {
        long key = poller.livenessKey();
        int waiting = 0;
        long lockMs = 0;
        if (key != 0) {
            for (Object t : poller.takers(QueueKind.WORKER)) {
                if (t instanceof HandOver.Taker k && k.takesUntagged()) {
                    if (waiting == 0) {
                        lockMs = k.claim().lockMs();
                    }
                    if (k.claim().lockMs() == lockMs) {
                        waiting++;
                    }
                }
            }
        }
        return new Account(key, waiting, waiting == 0 ? 1 : lockMs);
    }

    private void warn(String what, RuntimeException e) {
        long now = System.nanoTime();
        failuresSinceWarn++;
        if (failuresSinceWarn == 1 || now - lastWarnNanos >= WARN_INTERVAL_NANOS) {
            LOG.warn("pgdurable: {} ({} failure(s) since the last warning): {}", what, failuresSinceWarn,
                    e.getMessage());
            lastWarnNanos = now;
        } else {
            LOG.debug("pgdurable: hand-over across processes failed again", e);
        }
    }

    private void pause(long nanos) {
        lock.lock();
        try {
            long wait = nanos;
            while (!closed && wait > 0) {
                wait = changed.awaitNanos(wait);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops the thread (it sends the releases it holds first) and removes the row, so no process hands this one
     * anything more. An item handed over in that instant waits for its lease, like one leased to a process that died.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            thread.join(CLOSE_WAIT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        lock.lock();
        try {
            if (written == null) {
                return; // never written: there is no row
            }
        } finally {
            lock.unlock();
        }
        try {
            db.run("unregisterParkedFetches", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.unregisterParkedFetches)) {
                    ps.setString(1, origin);
                    ps.execute();
                    return null;
                }
            });
        } catch (RuntimeException e) {
            LOG.warn("pgdurable: could not remove this process's parked fetches on close; other processes find its "
                    + "listener gone and skip them: {}", e.getMessage());
        }
    }
}
