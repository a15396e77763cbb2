package io.pgdurable.longpoll;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One waiting fetch, registered before its first claim attempt. A wake is accepted whether the fetch is parked or
 * in the middle of a claim (the new item may have committed after that claim looked), so no wake-up is lost: the
 * fetch simply claims again. A wake still pending when the fetch ends is handed back to the registry.
 */
final class Waiter {
    final Route route;
    private final Semaphore permit = new Semaphore(0);
    private final AtomicReference<Hint> pending = new AtomicReference<>();
    private volatile boolean closed;

    Waiter(Route route) {
        this.route = route;
    }

    /** Takes the hint if this waiter can use it and holds no other wake. */
    boolean offer(Hint hint) {
        if (closed || !route.accepts(hint) || !pending.compareAndSet(null, hint)) {
            return false;
        }
        permit.release();
        return true;
    }

    /** True while the waiter has no wake pending (a hint can still reach it). */
    boolean isIdle() {
        return pending.get() == null && !closed;
    }

    /** Waits up to {@code nanos} for a wake: the {@link Hint}, or an {@link Outcome}. */
    Object await(long nanos) {
        try {
            if (!permit.tryAcquire(Math.max(0, nanos), TimeUnit.NANOSECONDS)) {
                return Outcome.TIMEOUT;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Outcome.INTERRUPTED;
        }
        if (closed) {
            return Outcome.CLOSED;
        }
        Hint h = pending.getAndSet(null);
        return h != null ? h : Outcome.TIMEOUT;
    }

    /** The wake that arrived but was never used (the fetch ended first), or null. */
    Hint takeUnused() {
        Hint h = pending.getAndSet(null);
        if (h != null) {
            permit.tryAcquire();
        }
        return h;
    }

    void close() {
        closed = true;
        permit.release();
    }

    enum Outcome { TIMEOUT, CLOSED, INTERRUPTED }
}
