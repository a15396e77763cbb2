package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A group of benchmark threads, each running its body over and over until {@link #stop()}. The first failure while
 * running is kept and rethrown by {@link #join()}; failures after stop (a fetch cut short by closing the provider)
 * are expected and dropped.
 */
final class Workers {
    /** One iteration of a thread's loop. */
    @FunctionalInterface
    interface Body {
        void run() throws Exception;
    }

    private final List<Thread> threads = new ArrayList<>();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile boolean running = true;

    /** Starts {@code count} threads named {@code name-i}; {@code body} gets the thread's index. */
    Workers start(String name, int count, java.util.function.IntFunction<Body> body) {
        for (int i = 0; i < count; i++) {
            Body b = body.apply(i);
            Thread t = new Thread(() -> loop(b), "bench-" + name + "-" + i);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        return this;
    }

    private void loop(Body body) {
        while (running && failure.get() == null) {
            try {
                body.run();
            } catch (Throwable e) {
                if (running) {
                    failure.compareAndSet(null, e);
                }
                return;
            }
        }
    }

    /** Calls {@link #stop()} when closed; {@link Workers#stopFirst()} hands one out. */
    interface Stopping extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * For a try-with-resources, declared after the provider's resource: when a scenario fails mid-run, the threads are
     * stopped before the provider closes, so their fetches cut off by the close are not recorded as failures that
     * would hide the scenario's own cause.
     */
    Stopping stopFirst() {
        return this::stop;
    }

    boolean running() {
        return running && failure.get() == null;
    }

    /** The first failure so far, or null. */
    Throwable failure() {
        return failure.get();
    }

    /**
     * Asks every thread to finish after its current iteration and waits (up to 5 s) until none is running a
     * statement any more, so that closing the provider next does not cut a statement off. Threads are not interrupted
     * (an interrupt closes a pgjdbc socket mid-statement): a short poller's sleep ends within 50 ms, and a long
     * poller's parked fetch returns when the provider is closed, which callers do after {@code stop()} and before
     * {@link #join()}.
     */
    void stop() {
        if (!running) {
            return;
        }
        running = false;
        long deadline = System.nanoTime() + 5_000_000_000L;
        int quietChecks = 0;
        while (quietChecks < 2 && System.nanoTime() < deadline) {
            boolean quiet = threads.stream().noneMatch(t -> t.getState() == Thread.State.RUNNABLE);
            quietChecks = quiet ? quietChecks + 1 : 0;
            Pause.sleep(10);
        }
    }

    /** Waits for the threads (up to 15 s in all) and rethrows the first failure while running. */
    void join() throws Exception {
        long deadline = System.nanoTime() + 15_000_000_000L;
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
        }
        Throwable f = failure.get();
        if (f != null) {
            rethrow(f);
        }
    }

    /** Fails fast when a thread failed: stops the others and rethrows (the caller closes the provider, then joins). */
    void check() throws Exception {
        Throwable f = failure.get();
        if (f != null) {
            stop();
            rethrow(f);
        }
    }

    private static void rethrow(Throwable f) throws Exception {
        if (f instanceof Exception e) {
            throw e;
        }
        if (f instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(f);
    }
}
