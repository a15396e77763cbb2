package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batched terminal acks: callers hand their ack over and block until it is flushed; one background thread flushes
 * up to {@code batchSize} buffered acks per call of {@link Flusher} (one {@code DELETE ... RETURNING} in SQL).
 *
 * <p>Group commit: a flush starts when the buffer is full, or when no new ack arrived for {@code idle} (the
 * consumers went idle: each is blocked on its own ack), or, with {@code idle} zero, as soon as the thread is free.
 * Acks that arrive while a flush runs wait for the next one, so the batch grows with the load and a lone ack waits
 * at most {@code idle} extra.
 *
 * <p>Each future completes exactly once: with the item's own outcome, with the flush's error (the whole call
 * failed and rolled back, so nothing of the batch was acked), or, at close, with a retryable "not flushed" error.
 */
final class WorkCompleter {
    private static final Logger LOG = LoggerFactory.getLogger(WorkCompleter.class);

    /** One terminal ack: the token, the application time of the ack call, and the completion (all may be null). */
    record Ack(String token, long nowMs, String instance, String kind, String completionJson) {}

    /** Flushes a batch; returns per position null (acked) or that item's own error; throws when the call failed. */
    @FunctionalInterface
    interface Flusher {
        ProviderException[] flush(List<Ack> acks);
    }

    private record Pending(Ack ack, CompletableFuture<Void> done) {}

    private final int batchSize;
    private final long idleNanos;
    private final Flusher flusher;
    private final String operation;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<Pending> queue = new ArrayDeque<>();
    private final Thread thread;
    private boolean accepting = true;
    private long drainDeadline;
    private int inFlight;

    WorkCompleter(String name, String operation, int batchSize, Duration idle, Flusher flusher) {
        this.batchSize = batchSize;
        this.idleNanos = idle.toNanos();
        this.flusher = flusher;
        this.operation = operation;
        this.thread = new Thread(this::run, name);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Buffers an ack; the future completes when it is flushed. Fails at once when closing. */
    CompletableFuture<Void> submit(Ack ack) {
        Pending p = new Pending(ack, new CompletableFuture<>());
        lock.lock();
        try {
            if (!accepting) {
                throw ProviderException.permanent(operation, "the provider is closed");
            }
            queue.add(p);
            arrived.signal();
        } finally {
            lock.unlock();
        }
        return p.done;
    }

    /** Acks handed over and not yet answered (buffered or in the flush running now). */
    int pending() {
        lock.lock();
        try {
            return queue.size() + inFlight;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits for an ack's outcome, at most {@code bound} (a safety net: every future is completed by the flusher or
     * by {@link #close}). Interrupts are remembered and restored, not obeyed: the ack is an honest barrier.
     */
    static void await(String operation, CompletableFuture<Void> done, Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    done.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    return;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof ProviderException pe) {
                        throw pe;
                    }
                    throw new ProviderException(operation, "batched ack failed: " + e.getCause(), false, null,
                            e.getCause());
                } catch (TimeoutException e) {
                    throw ProviderException.retryable(operation, "the batched ack was not confirmed within " + bound
                            + "; its outcome is unknown (it may still be flushed)");
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Stops accepting acks and flushes what is buffered for at most {@code drain}; acks still buffered then fail
     * (retryable: their items are redelivered after their leases expire). A flush already running is not
     * interrupted; it completes its own acks.
     */
    void close(Duration drain) {
        lock.lock();
        try {
            if (!accepting) {
                return;
            }
            accepting = false;
            drainDeadline = System.nanoTime() + drain.toNanos();
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
        if (!drain.isZero()) {
            try {
                thread.join(Math.max(1, drain.toMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        List<Pending> unflushed;
        lock.lock();
        try {
            unflushed = new ArrayList<>(queue);
            queue.clear();
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
        if (!unflushed.isEmpty()) {
            LOG.warn("pgdurable: {} batched ack(s) not flushed within the drain timeout {}; their items are "
                    + "redelivered after their leases expire", unflushed.size(), drain);
        }
        for (Pending p : unflushed) {
            p.done.completeExceptionally(ProviderException.retryable(operation, "the provider closed before this "
                    + "batched ack was flushed (ackDrainTimeout " + drain + "); the item is redelivered after its "
                    + "lease expires"));
        }
    }

    private void run() {
        while (true) {
            List<Pending> batch = nextBatch();
            if (batch == null) {
                return;
            }
            flush(batch);
            lock.lock();
            try {
                inFlight = 0;
            } finally {
                lock.unlock();
            }
        }
    }

    /** The next batch to flush, or null when closed and nothing (more) may be flushed. */
    private List<Pending> nextBatch() {
        lock.lock();
        try {
            while (queue.isEmpty() && accepting) {
                arrived.awaitUninterruptibly();
            }
            if (accepting) {
                long windowEnd = System.nanoTime() + idleNanos;
                while (accepting && queue.size() < batchSize) {
                    long left = windowEnd - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    int before = queue.size();
                    try {
                        arrived.awaitNanos(left);
                    } catch (InterruptedException e) {
                        break; // nobody interrupts this thread; flush what is there
                    }
                    if (queue.size() > before) {
                        windowEnd = System.nanoTime() + idleNanos; // still busy: keep the window open
                    }
                }
            }
            if (queue.isEmpty() || (!accepting && System.nanoTime() - drainDeadline >= 0)) {
                return null; // closed: close() answers whatever is left
            }
            List<Pending> batch = new ArrayList<>(Math.min(batchSize, queue.size()));
            while (batch.size() < batchSize && !queue.isEmpty()) {
                batch.add(queue.poll());
            }
            inFlight = batch.size();
            return batch;
        } finally {
            lock.unlock();
        }
    }

    private void flush(List<Pending> batch) {
        List<Ack> acks = new ArrayList<>(batch.size());
        for (Pending p : batch) {
            acks.add(p.ack);
        }
        ProviderException[] outcomes;
        try {
            outcomes = flusher.flush(acks);
        } catch (ProviderException e) {
            for (Pending p : batch) {
                p.done.completeExceptionally(copy(e));
            }
            return;
        } catch (RuntimeException | Error e) {
            LOG.error("pgdurable: a batched ack flush failed unexpectedly", e);
            for (Pending p : batch) {
                p.done.completeExceptionally(new ProviderException(operation, "batched ack flush failed: " + e,
                        false, null, e));
            }
            return;
        }
        for (int i = 0; i < batch.size(); i++) {
            if (outcomes[i] == null) {
                batch.get(i).done.complete(null);
            } else {
                batch.get(i).done.completeExceptionally(outcomes[i]);
            }
        }
    }

    /** Each waiting caller gets an exception of its own (they are thrown on different threads). */
    private ProviderException copy(ProviderException e) {
        String prefix = e.operation() + ": ";
        String message = e.getMessage().startsWith(prefix) ? e.getMessage().substring(prefix.length()) : e.getMessage();
        return new ProviderException(e.operation(), message, e.retryable(), e.sqlState().orElse(null),
                e.getCause() != null ? e.getCause() : e);
    }
}
