package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import io.pgdurable.spi.CapacityExceededException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/**
 * The parked fetches of one provider, per queue, oldest first. A hint wakes at most as many matching waiters as it
 * announces items (one for a lease end), so a burst of one item wakes about one waiter instead of all of them.
 * Registration is bounded: beyond {@code maxWaiters} a fetch is refused with {@link CapacityExceededException}.
 */
final class WaiterRegistry {
    private final int maxWaiters;
    private final Map<QueueKind, List<Waiter>> waiters = new EnumMap<>(QueueKind.class);
    private final ReentrantLock lock = new ReentrantLock();
    private final AtomicInteger size = new AtomicInteger();
    /** Per queue, the registered fetches: every write that may hand over reads it, so the read takes no lock. */
    private final AtomicIntegerArray sizes = new AtomicIntegerArray(QueueKind.values().length);
    private final AtomicLong woken = new AtomicLong();
    /**
     * Per queue, how many hints have been routed here (and listener reconnects seen): a claim that found nothing
     * at epoch E proves that nothing announced up to E is claimable for it (see {@link LongPoller#fetch}).
     */
    private final AtomicLongArray epochs = new AtomicLongArray(QueueKind.values().length);
    private final LongPollSignals signals;
    /** Who counts one queue's fetches that take hand-overs (hand-over across processes), or null. */
    private volatile TakerWatch takerWatch;
    private boolean closed;

    WaiterRegistry(int maxWaiters, LongPollSignals signals) {
        this.maxWaiters = maxWaiters;
        this.signals = signals;
        for (QueueKind q : QueueKind.values()) {
            waiters.put(q, new ArrayList<>());
        }
    }

    Waiter register(QueueKind queue, Route route, Object takes, String operation) {
        Waiter registered;
        lock.lock();
        try {
            if (closed) {
                return null;
            }
            if (size.get() >= maxWaiters) {
                signals.capacityRefused(queue);
                throw new CapacityExceededException(operation, "already " + size.get() + " fetches are parked, the "
                        + "configured maximum (maxParkedWaiters); retry later or raise the limit");
            }
            Waiter w = new Waiter(route, takes);
            waiters.get(queue).add(w);
            size.incrementAndGet();
            sizes.incrementAndGet(queue.ordinal());
            registered = w;
        } finally {
            lock.unlock();
        }
        takerChanged(queue, takes);
        return registered;
    }

    private record TakerWatch(QueueKind queue, Runnable counter) {
    }

    /** {@code counter} runs after a fetch of {@code queue} that takes hand-overs registered or ended. */
    void watchTakers(QueueKind queue, Runnable counter) {
        takerWatch = new TakerWatch(queue, counter);
    }

    /** Runs the watcher's counter for a reason outside the registry (the listener's session changed). */
    void recountTakers() {
        TakerWatch w = takerWatch;
        if (w != null) {
            w.counter().run();
        }
    }

    private void takerChanged(QueueKind queue, Object takes) {
        TakerWatch w = takerWatch;
        if (w != null && takes != null && w.queue() == queue) {
            w.counter().run();
        }
    }

    /** What each registered fetch of {@code queue} that takes hand-overs takes, oldest first. */
    List<Object> takers(QueueKind queue) {
        lock.lock();
        try {
            List<Object> takes = new ArrayList<>();
            for (Waiter w : waiters.get(queue)) {
                if (w.takes != null) {
                    takes.add(w.takes);
                }
            }
            return takes;
        } finally {
            lock.unlock();
        }
    }

    /** Removes a finished fetch; a wake it never used goes to another waiter, so it is not lost. */
    void deregister(QueueKind queue, Waiter w) {
        lock.lock();
        try {
            if (waiters.get(queue).remove(w)) {
                size.decrementAndGet();
                sizes.decrementAndGet(queue.ordinal());
            }
        } finally {
            lock.unlock();
        }
        takerChanged(queue, w.takes);
        for (Hint unused : w.takeUnused()) {
            wake(unused, w, WakeSource.HANDOFF);
        }
    }

    /**
     * Reserves the oldest parked fetch of {@code queue} without a pending wake whose {@link Waiter#takes} the writer's
     * item {@code fits}; null when there is none.
     */
    Waiter reserve(QueueKind queue, Predicate<Object> fits) {
        lock.lock();
        try {
            for (Waiter w : waiters.get(queue)) {
                if (w.takes != null && fits.test(w.takes) && w.reserve()) {
                    return w;
                }
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Wakes up to {@code hint.wakes()} parked waiters of the hint's queue whose route accepts it, oldest first,
     * skipping {@code except}. Returns how many were woken.
     */
    int wake(Hint hint, Waiter except, WakeSource source) {
        epochs.incrementAndGet(hint.queue().ordinal());
        int budget = hint.wakes();
        // Only a deadline's own wake for items (not a lease end, nor a probe's answer about one) is a visibility time.
        boolean ahead = source == WakeSource.DEADLINE && hint.count() > 0;
        int n = 0;
        Waiter first = null; // the common wake releases one fetch: no list for it
        List<Waiter> more = null;
        lock.lock();
        try {
            for (Waiter w : waiters.get(hint.queue())) {
                if (n == budget) {
                    break;
                }
                if (w == except) {
                    continue;
                }
                Waiter.Offered offered = w.offer(hint, ahead);
                if (offered == Waiter.Offered.REFUSED) {
                    continue;
                }
                n++;
                if (offered == Waiter.Offered.TAKEN) {
                    if (first == null) {
                        first = w;
                    } else {
                        if (more == null) {
                            more = new ArrayList<>();
                        }
                        more.add(w);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        // Recorded before any fetch is released, so a fetch's return always finds its wake counted.
        for (int i = 0; i < n; i++) {
            signals.waiterWoken(hint.queue(), source);
        }
        woken.addAndGet(n);
        if (first != null) {
            first.unpark();
        }
        if (more != null) {
            for (Waiter w : more) {
                w.unpark();
            }
        }
        return n;
    }

    /** A reserved fetch was handed its item: counted and signalled as a wake, before the fetch is released. */
    void handedOver(QueueKind queue) {
        signals.waiterWoken(queue, WakeSource.HANDOVER);
        woken.incrementAndGet();
    }

    /** True when a fetch waits on {@code queue} without a pending wake (the fallback probe runs only then). */
    boolean anyIdle(QueueKind queue) {
        lock.lock();
        try {
            for (Waiter w : waiters.get(queue)) {
                if (w.isIdle()) {
                    return true;
                }
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    int size() {
        return size.get();
    }

    /** Fetches registered on {@code queue} right now. */
    int size(QueueKind queue) {
        return sizes.get(queue.ordinal());
    }

    /** The queue's epoch: moves with every hint routed to it. */
    long epoch(QueueKind queue) {
        return epochs.get(queue.ordinal());
    }

    /** Moves every epoch: something may have become claimable unannounced (a listener reconnected). */
    void touchAll() {
        for (QueueKind q : QueueKind.values()) {
            epochs.incrementAndGet(q.ordinal());
        }
    }

    /** Total wakes handed out, for the wakes-per-item measurement. */
    long wakesIssued() {
        return woken.get();
    }

    /** Every parked fetch returns empty; later registrations are refused. */
    void close() {
        lock.lock();
        try {
            closed = true;
            for (List<Waiter> list : waiters.values()) {
                list.forEach(Waiter::close);
            }
        } finally {
            lock.unlock();
        }
    }
}
