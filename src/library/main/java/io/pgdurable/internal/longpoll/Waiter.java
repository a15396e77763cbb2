package io.pgdurable.internal.longpoll;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One waiting fetch, registered before its first claim attempt. A wake is accepted whether the fetch is parked or
 * in the middle of a claim (the new item may have committed after that claim looked), so no wake-up is lost: the
 * fetch simply claims again. A wake still pending when the fetch ends is handed back to the registry.
 *
 * <p>A parked fetch that declared what it {@link #takes} can instead be reserved by a writer of this process, which
 * then hands it an item leased in the writer's own transaction (see {@link Reservation}). While reserved it takes
 * no other wake for itself: one that arrives is kept aside and used, or given back, when the reservation ends. A
 * fetch that gives up while reserved either finds the item already handed over (and returns it: the lease is its
 * own) or leaves the writer a refusal, so the writer releases the item; nothing is left leased to nobody.
 */
final class Waiter {
    /** {@link #pending} while the fetch is parked without a wake: only then can a writer reserve it. */
    private static final Object PARKED = new Object();
    /** {@link #pending} while a writer holds the reservation. */
    private static final Object RESERVED = new Object();
    /** {@link #pending} once the reserving writer handed its item over ({@link #handed} holds it). */
    private static final Object DELIVERED = new Object();
    /** {@link #pending} once the fetch gave up on a reservation: the writer's hand-over is refused. */
    private static final Object GONE = new Object();
    /**
     * {@link #pending} once the fetch took its handed-over item: it returns it and claims no more, so a wake offered
     * before it deregisters goes to another waiter at once rather than through this one's hand-back.
     */
    private static final Object FINISHED = new Object();
    /**
     * {@link #pending} while the fetch waits out the wake cadence before claiming again: wakes go to other fetches,
     * which claim at once; this one claims when the pause ends in any case.
     */
    private static final Object PAUSED = new Object();
    private static final Hint[] NONE = new Hint[0];

    final Route route;
    /** What this fetch takes from a writer's hand-over (the provider's claim request), or null: it only claims. */
    final Object takes;
    private final Semaphore permit = new Semaphore(0);
    /**
     * null (claiming, no wake), {@link #PARKED}, {@link #PAUSED}, a {@link Hint} or {@link Ahead}, or a reservation
     * state above.
     */
    private final AtomicReference<Object> pending = new AtomicReference<>();
    /** A wake that arrived while reserved. */
    private final AtomicReference<Hint> aside = new AtomicReference<>();
    private volatile Object handed;
    private volatile boolean closed;

    Waiter(Route route, Object takes) {
        this.route = route;
        this.takes = takes;
    }

    /**
     * Takes the hint if this waiter can use it and holds no other wake (a reserved one keeps it aside). A taken hint
     * does not release the fetch yet: the registry records the wake first and then calls {@link #unpark}, so whoever
     * observes the fetch return also observes what woke it. {@code ahead}: the hint is a visibility time the fetch
     * may claim ahead of (it is held as an {@link Ahead}).
     */
    Offered offer(Hint hint, boolean ahead) {
        if (closed || !route.accepts(hint)) {
            return Offered.REFUSED;
        }
        while (true) {
            Object p = pending.get();
            if (p == null || p == PARKED) {
                if (pending.compareAndSet(p, ahead ? new Ahead(hint) : hint)) {
                    return Offered.TAKEN;
                }
            } else {
                return p == RESERVED && aside.compareAndSet(null, hint) ? Offered.KEPT_ASIDE : Offered.REFUSED;
            }
        }
    }

    /**
     * Releases the fetch after a {@link Offered#TAKEN} offer or a successful {@link #handOver}. A fetch that gave up
     * in between has already taken (or passed on) its wake, so the spare permit it receives is never read.
     */
    void unpark() {
        permit.release();
    }

    /** Refuses wakes until {@link #resume}; false when a wake arrived first (the fetch will use it after the pause). */
    boolean pause() {
        return pending.compareAndSet(null, PAUSED);
    }

    void resume() {
        pending.compareAndSet(PAUSED, null);
    }

    /** True while the waiter has no wake pending (a hint can still reach it). */
    boolean isIdle() {
        Object p = pending.get();
        return (p == null || p == PARKED) && !closed;
    }

    /** Reserves this parked fetch for one writer's hand-over; false unless it is parked without a wake. */
    boolean reserve() {
        return takes != null && !closed && pending.compareAndSet(PARKED, RESERVED);
    }

    /**
     * The reserving writer's item; false when the fetch gave up first (the writer must release the item). On true the
     * caller records the wake and then {@link #unpark}s the fetch.
     */
    boolean handOver(Object item) {
        handed = item;
        if (pending.compareAndSet(RESERVED, DELIVERED)) {
            return true;
        }
        handed = null;
        return false;
    }

    /**
     * Ends a reservation without an item: the fetch parks on, or claims for a wake kept aside meanwhile. Returns
     * that wake when the fetch gave up in between and cannot use it, for the registry to give to another; else null.
     */
    Hint release() {
        Hint kept = aside.getAndSet(null);
        if (pending.compareAndSet(RESERVED, kept == null ? PARKED : kept)) {
            if (kept != null) {
                permit.release();
            }
            return null;
        }
        return kept;
    }

    /**
     * Waits up to {@code nanos} for a wake: the {@link Hint} or {@link Ahead}, a {@link Delivered} item, or an
     * {@link Outcome}. A
     * fetch that stops waiting while reserved settles the reservation first, so an item handed over meanwhile is
     * returned rather than left leased.
     */
    Object await(long nanos) {
        pending.compareAndSet(null, PARKED);
        Outcome stopped = null;
        try {
            if (!permit.tryAcquire(Math.max(0, nanos), TimeUnit.NANOSECONDS)) {
                stopped = Outcome.TIMEOUT;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = Outcome.INTERRUPTED;
        }
        if (stopped == null && closed && pending.get() != DELIVERED) {
            stopped = Outcome.CLOSED;
        }
        if (stopped != null) {
            return giveUp(stopped);
        }
        if (pending.compareAndSet(DELIVERED, FINISHED)) {
            return new Delivered(takeHanded());
        }
        Object p = pending.getAndSet(null);
        return p instanceof Hint || p instanceof Ahead ? p : Outcome.TIMEOUT;
    }

    /** Leaves the parked state; an item already handed over is still returned, a reservation is refused. */
    private Object giveUp(Outcome stopped) {
        while (true) {
            Object p = pending.get();
            if (p == DELIVERED) {
                pending.set(FINISHED);
                permit.tryAcquire();
                return new Delivered(takeHanded());
            }
            if (p == PARKED || p == RESERVED) {
                if (pending.compareAndSet(p, p == PARKED ? null : GONE)) {
                    return stopped;
                }
            } else {
                return stopped; // a wake that came too late stays pending; the registry passes it on
            }
        }
    }

    private Object takeHanded() {
        Object item = handed;
        handed = null;
        return item;
    }

    /** The wakes that arrived but were never used (the fetch ended first): none, one or two. */
    Hint[] takeUnused() {
        Object p = pending.getAndSet(null);
        Hint kept = aside.getAndSet(null);
        Hint h = p instanceof Hint hint ? hint : p instanceof Ahead a ? a.hint() : null;
        if (h != null) {
            permit.tryAcquire();
        }
        if (h == null && kept == null) {
            return NONE;
        }
        return h == null ? new Hint[] {kept} : kept == null ? new Hint[] {h} : new Hint[] {h, kept};
    }

    void close() {
        closed = true;
        permit.release();
    }

    enum Outcome { TIMEOUT, CLOSED, INTERRUPTED }

    /** What {@link #offer} did with a hint: refused it, took it (the fetch awaits {@link #unpark}), or kept it aside. */
    enum Offered { REFUSED, TAKEN, KEPT_ASIDE }

    /**
     * A deadline's wake for the visibility time of its hint (a kept-aside or passed-on wake is a plain {@link Hint}):
     * the fetch may claim what becomes visible by then at once, and return it no earlier.
     */
    record Ahead(Hint hint) {}

    /** An item a writer handed over: the fetch's result, leased to it already. */
    record Delivered(Object item) {}
}
