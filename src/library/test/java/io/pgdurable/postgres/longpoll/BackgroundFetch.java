package io.pgdurable.postgres.longpoll;

import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * One fetch running on a thread of its own, with the moments that matter: when it started, when it returned (both
 * monotonic and wall-clock, the provider's clock), what it returned and whether its interrupt flag was set after.
 * {@link #awaitParked} waits until the fetch really sleeps in the waiter registry (not merely registered).
 */
final class BackgroundFetch<T> {
    private static final AtomicInteger SEQ = new AtomicInteger();

    private final String name;
    private final Thread thread;
    private final CompletableFuture<Optional<T>> result = new CompletableFuture<>();
    private volatile long startNanos;
    private volatile long endNanos;
    private volatile long endMillis;
    private volatile boolean interruptedAfter;

    private BackgroundFetch(String name, Supplier<Optional<T>> fetch) {
        this.name = name;
        this.thread = new Thread(() -> run(fetch), "lp-test-" + name + "-" + SEQ.incrementAndGet());
        this.thread.setDaemon(true);
    }

    static <T> BackgroundFetch<T> start(String name, Supplier<Optional<T>> fetch) {
        BackgroundFetch<T> f = new BackgroundFetch<>(name, fetch);
        f.startNanos = System.nanoTime();
        f.thread.start();
        return f;
    }

    private void run(Supplier<Optional<T>> fetch) {
        try {
            startNanos = System.nanoTime(); // the fetch's own clock starts now, not when the thread was asked to start
            Optional<T> r = fetch.get();
            endNanos = System.nanoTime();
            endMillis = System.currentTimeMillis();
            interruptedAfter = Thread.currentThread().isInterrupted();
            result.complete(r);
        } catch (Throwable t) {
            endNanos = System.nanoTime();
            endMillis = System.currentTimeMillis();
            interruptedAfter = Thread.currentThread().isInterrupted();
            result.completeExceptionally(t);
        }
    }

    /** True while the fetch sleeps in {@code Waiter.await} (registered, first claim done, waiting for a wake). */
    boolean parked() {
        Thread.State s = thread.getState();
        if (s != Thread.State.TIMED_WAITING && s != Thread.State.WAITING) {
            return false;
        }
        return Arrays.stream(thread.getStackTrace()).anyMatch(
                f -> f.getClassName().equals("io.pgdurable.internal.longpoll.Waiter") && f.getMethodName().equals("await"));
    }

    BackgroundFetch<T> awaitParked(Duration timeout) {
        Waits.until(() -> parked() || result.isDone(), timeout, () -> name + " to park; state " + thread.getState()
                + ", stack " + Arrays.toString(thread.getStackTrace()));
        if (result.isDone()) {
            throw new AssertionError(name + " returned before it parked: " + describe());
        }
        return this;
    }

    /** The fetch's result; fails when it threw or has not returned within {@code timeout}. */
    Optional<T> get(Duration timeout) {
        try {
            return result.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(name + " did not return within " + timeout.toMillis() + " ms; stack "
                    + Arrays.toString(thread.getStackTrace()));
        } catch (ExecutionException e) {
            throw new AssertionError(name + " threw " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** The exception the fetch threw; fails when it returned normally or not within {@code timeout}. */
    Throwable failure(Duration timeout) {
        try {
            Optional<T> r = result.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            throw new AssertionError(name + " returned " + r + " instead of throwing");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            throw new AssertionError(name + " did not end within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    boolean isDone() {
        return result.isDone();
    }

    void interrupt() {
        thread.interrupt();
    }

    Thread thread() {
        return thread;
    }

    long startNanos() {
        return startNanos;
    }

    long endNanos() {
        return endNanos;
    }

    /** Wall-clock millis (the provider's clock) when the fetch returned. */
    long endMillis() {
        return endMillis;
    }

    /** Milliseconds from {@code fromNanos} (a {@link System#nanoTime()} reading) to the fetch's return. */
    long millisSince(long fromNanos) {
        return TimeUnit.NANOSECONDS.toMillis(endNanos - fromNanos);
    }

    boolean interruptedAfter() {
        return interruptedAfter;
    }

    String describe() {
        String outcome = !result.isDone() ? "-" : result.isCompletedExceptionally()
                ? "threw " + result.handle((r, t) -> t).join() : String.valueOf(result.join());
        return name + "{done=" + result.isDone() + ", result=" + outcome
                + ", ran " + (endNanos == 0 ? "-" : TimeUnit.NANOSECONDS.toMillis(endNanos - startNanos) + " ms")
                + "}";
    }
}
