package io.pgdurable.bench;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The batched variant of {@link ThroughputScenario}, through the batching APIs: each client enqueues
 * {@value #BATCH} items in one call ({@code enqueueAllForWorker}), fetches up to {@value #BATCH} in one call
 * ({@code fetchWorkItems}) and acks them as a runtime's workers would, each item's {@code ackWorkItem} on a thread
 * of its own, so the provider's batched ack ({@code ackBatchSize} {@value #BATCH}) flushes them together.
 */
final class BatchedThroughput {
    static final int BATCH = 100;
    private static final Duration LOCK = Duration.ofSeconds(60);

    private BatchedThroughput() {}

    static boolean available() {
        return true;
    }

    static String unavailableReason() {
        return "the batching APIs are not in this build";
    }

    /** Long mode parks until work arrives (up to the poll timeout); short mode makes one attempt. */
    private static WorkBatch batch(Mode mode) {
        return mode == Mode.LONG ? new WorkBatch(BATCH, 1, Mode.LONG_POLL_TIMEOUT) : WorkBatch.upTo(BATCH);
    }

    /** Daemon threads for {@link #ackEachOnItsOwnThread}, one per ack that may be in flight at once. */
    static ExecutorService ackThreads(int threads, String name) {
        return Executors.newFixedThreadPool(threads, runnable -> {
            Thread t = new Thread(runnable, name);
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Acks a fetched batch as a runtime's workers would, each item's {@code ackWorkItem} on a thread of its own, so a
     * provider with {@code ackBatchSize} above 1 groups them; returns when all are acked (rethrows the first error).
     */
    static void ackEachOnItsOwnThread(OrchestrationProvider p, ExecutorService ackers, List<FetchedWorkItem> got)
            throws Exception {
        List<Future<?>> acks = new ArrayList<>(got.size());
        for (FetchedWorkItem f : got) {
            acks.add(ackers.submit(() -> p.ackWorkItem(f.lockToken(), null)));
        }
        for (Future<?> a : acks) {
            a.get();
        }
    }

    static void run(Mode mode, BenchContext ctx, ModeResult r, String scenario) throws Exception {
        Profile prof = ctx.profile();
        int clients = ThroughputScenario.CLIENTS;
        LatencyRecorder cycle = new LatencyRecorder();
        AtomicLong done = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        Workers workers = new Workers();
        ExecutorService ackers = ackThreads(clients * BATCH, "bench-batched-ack");
        try (Hub hub = ctx.hub(scenario + "_batched", mode, clients + 4, b -> b.ackBatchSize(BATCH));
             Workers.Stopping stopFirst = workers.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            workers.start("tp-batched", clients, i -> () -> {
                long t0 = System.nanoTime();
                List<WorkItem> items = new ArrayList<>(BATCH);
                for (int k = 0; k < BATCH; k++) {
                    items.add(new WorkItem.ActivityExecute("tpb", 1, seq.incrementAndGet(), "Tp", "{}"));
                }
                p.enqueueAllForWorker(items);
                List<FetchedWorkItem> got = p.fetchWorkItems(LOCK, batch(mode), null, TagFilter.defaultOnly());
                if (got.isEmpty()) {
                    if (mode == Mode.SHORT) {
                        Pause.sleep(Mode.SHORT_POLL_INTERVAL.toMillis());
                    }
                    return;
                }
                ackEachOnItsOwnThread(p, ackers, got);
                cycle.recordNanos(System.nanoTime() - t0);
                done.addAndGet(got.size());
            });
            Window w = Window.measure(ctx, workers, done, prof.throughputWarmup(), prof.throughputWindow(),
                    "throughput batched " + mode.key(), "items");
            workers.stop();
            r.metric("batched.itemsPerSecond", w.perSecond(), "items/s", "batches of " + BATCH + ": one enqueue, "
                    + "one fetch, batched acks, " + clients + " clients");
            w.perUnit(r, ctx, "batched.", "item");
            r.latency("batched.cycle", cycle);
            r.detail("batched.topStatements", w.top());
            r.detail("batched.waitEvents", w.waits());
        } finally {
            workers.stop();
            ackers.shutdown();
            workers.join();
        }
    }
}
