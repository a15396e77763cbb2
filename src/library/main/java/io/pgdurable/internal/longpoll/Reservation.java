package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;

/**
 * A parked fetch held for one write of this process (see {@link LongPoller#reserve}). The writer leases its item to
 * the fetch in its own transaction, using what the fetch {@link #takes}, and after the commit hands the item over:
 * the fetch returns it without a claim, so a wake costs no statement. Every reservation ends exactly once, in
 * {@link #handOver} or {@link #cancel}.
 */
public final class Reservation {
    private final WaiterRegistry registry;
    private final QueueKind queue;
    private final Waiter waiter;

    Reservation(WaiterRegistry registry, QueueKind queue, Waiter waiter) {
        this.registry = registry;
        this.queue = queue;
        this.waiter = waiter;
    }

    /** What the reserved fetch takes (as it declared it to {@link LongPoller#fetch}). */
    public Object takes() {
        return waiter.takes;
    }

    /**
     * Gives the committed, leased item to the fetch. False when the fetch stopped waiting first (timed out,
     * interrupted, closed): the item is then leased to nobody, and the writer must release it.
     */
    public boolean handOver(Object item) {
        if (!waiter.handOver(item)) {
            return false;
        }
        registry.handedOver(queue);
        waiter.unpark();
        return true;
    }

    /** Ends the reservation without an item (the write failed or did not lease one): the fetch waits on. */
    public void cancel() {
        Hint kept = waiter.release();
        if (kept != null) {
            registry.wake(kept, waiter, WakeSource.HANDOFF);
        }
    }
}
