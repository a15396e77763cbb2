package io.pgdurable.bench;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * End-to-end worker-queue throughput, shaped like the pgbench reference (insert, SKIP LOCKED claim, delete per
 * client): {@value #CLIENTS} clients, each looping enqueue → fetch → ack of one item. A client's fetch finds the
 * item it (or another client) just enqueued, so the queue never runs dry; the figure is what the provider's
 * statements cost. The batched variant (batches of {@value BatchedThroughput#BATCH}) runs when the batching APIs
 * exist.
 */
final class ThroughputScenario extends PairedScenario {
    static final int CLIENTS = 4;
    private static final Duration LOCK = Duration.ofSeconds(60);

    @Override
    public String name() {
        return "throughput";
    }

    @Override
    public String title() {
        return "End-to-end throughput: enqueue → fetch → ack";
    }

    @Override
    String description() {
        return CLIENTS + " clients, each looping: enqueue one worker item, fetch one (short: pollTimeout 0, 50 ms "
                + "sleep if empty; long: pollTimeout 30 s), ack it. Items/s = acks in the window / window; cycle = "
                + "one client's enqueue start to ack end. Batched: each client enqueues " + BatchedThroughput.BATCH
                + " items in one call, fetches up to " + BatchedThroughput.BATCH + " in one call and acks them "
                + "through the batched ack.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("clients", CLIENTS);
        m.put("warmupSeconds", p.throughputWarmup().toMillis() / 1000.0);
        m.put("windowSeconds", p.throughputWindow().toMillis() / 1000.0);
        m.put("batchSize", BatchedThroughput.BATCH);
        m.put("batchedAvailable", BatchedThroughput.available());
        return m;
    }

    @Override
    int rounds(Profile profile) {
        return profile.pairedRounds();
    }

    /** The raw-SQL yardstick, measured once before the modes. */
    private RawQueueBaseline.Result baseline;

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        ctx.progress().line("throughput: raw-SQL reference queue (same database, plain JDBC) ...");
        baseline = RawQueueBaseline.measure(ctx, CLIENTS, BatchedThroughput.BATCH);
        ctx.progress().line("throughput: raw-SQL reference: %s items/s single, %s items/s in batches of %d",
                Num.text(baseline.singlePerSecond()), Num.text(baseline.batchedPerSecond()), baseline.batch());
        notes.add("reference: a raw-SQL queue (insert, SKIP LOCKED claim, delete; " + CLIENTS + " clients, plain "
                + "JDBC) on the same database in this run: " + Num.text(baseline.singlePerSecond())
                + " items/s one at a time, " + Num.text(baseline.batchedPerSecond()) + " items/s in batches of "
                + baseline.batch() + ".");
        return super.run(ctx);
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        ModeResult r = new ModeResult(mode);
        r.detail("rawSqlReference", baseline.toJson());
        single(mode, ctx, r);
        if (BatchedThroughput.available()) {
            BatchedThroughput.run(mode, ctx, r, name() + roundSuffix());
        } else if (mode == Mode.SHORT) {
            notes.add("batched: not measured — " + BatchedThroughput.unavailableReason());
        }
        return r;
    }

    private void single(Mode mode, BenchContext ctx, ModeResult r) throws Exception {
        Profile prof = ctx.profile();
        LatencyRecorder cycle = new LatencyRecorder();
        AtomicLong done = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        Workers clients = new Workers();
        try (Hub hub = ctx.hub(name() + "_single" + roundSuffix(), mode, CLIENTS + 2);
             Workers.Stopping stopFirst = clients.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            clients.start("tp-client", CLIENTS, i -> () -> {
                long t0 = System.nanoTime();
                p.enqueueForWorker(new WorkItem.ActivityExecute("tp", 1, seq.incrementAndGet(), "Tp", "{}"));
                Optional<FetchedWorkItem> f = Optional.empty();
                while (f.isEmpty() && clients.running()) {
                    f = mode.pollWork(p, LOCK);
                }
                if (f.isPresent()) {
                    p.ackWorkItem(f.get().lockToken(), null);
                    cycle.recordNanos(System.nanoTime() - t0);
                    done.incrementAndGet();
                }
            });
            Window w = Window.measure(ctx, clients, done, prof.throughputWarmup(), prof.throughputWindow(),
                    "throughput single " + mode.key(), "items");
            clients.stop();
            r.metric("single.itemsPerSecond", w.perSecond(), "items/s", "single-item enqueue → fetch → ack, "
                    + CLIENTS + " clients");
            w.perUnit(r, ctx, "single.", "item");
            r.latency("single.cycle", cycle);
            r.detail("single.topStatements", w.top());
            r.detail("single.waitEvents", w.waits());
        } finally {
            clients.stop();
            clients.join();
        }
    }
}
