package io.pgdurable.bench;

import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;

import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Wake latency: one dispatcher waits on each queue; the producer enqueues one item at a time and takes a timestamp
 * when the enqueue call returns (the commit); the dispatcher takes one when its fetch returns the item. The gap
 * between items is random, so a short poller's phase is uniformly spread. The producer is the dispatchers' own
 * provider (a runtime scheduling its own work: the wake needs no round trip) or, for a third series, another
 * provider on the same schema (a client in another process: the wake travels by NOTIFY).
 */
final class WakeScenario extends PairedScenario {
    private static final Duration LOCK = Duration.ofMinutes(10); // no lease ends inside the run
    private static final String NAME = "Wake";
    /** Keeps the reference claims' items away from the dispatchers, which fetch untagged items only. */
    private static final String IDLE_CLAIM_TAG = "idle-claim";

    @Override
    public String name() {
        return "wake";
    }

    @Override
    public String title() {
        return "Wake latency: enqueue commit to fetch return";
    }

    @Override
    String description() {
        return "One dispatcher per queue waits; the producer enqueues one item at a time (worker: ActivityExecute; "
                + "orchestrator: StartOrchestration of a new instance), 10-30 ms apart (random), in turn: a worker "
                + "item and an orchestrator message through the dispatchers' own provider, then a worker item through "
                + "a second provider on the same schema (series workerFromOtherProvider: as from another process; "
                + "both providers run with handOverAcrossProcesses, so with long polling the item is leased to the "
                + "parked dispatcher in the enqueue's transaction and travels inside the NOTIFY, no claim), and a "
                + "worker item through a third provider without that option (series workerFromOtherProviderClaiming: "
                + "the NOTIFY wakes the dispatcher, which claims; -Dpgdurable.bench.noHandOverAcross=true turns the "
                + "option off for the first two as well). "
                + "Latency = the dispatcher's clock when fetch returns the item minus the producer's clock when the "
                + "enqueue call returned (after its commit). A negative sample means the fetch returned before the "
                + "enqueue call did. With long polling the own provider's worker items are handed over to the parked "
                + "dispatcher, leased in the enqueue's transaction, so that series has no claim. Reference series "
                + "idleClaim (no wake involved): once the dispatchers stopped, "
                + "an item is enqueued through the second provider, 10-30 ms later the dispatchers' provider claims "
                + "it with a fetch that does not wait; its latency is that claim's round trip, the last step of "
                + "every wake, on connections idle for as long as a parked dispatcher's. Each mode first runs 25 unrecorded "
                + "rounds (one item of each series; details warmUpSamples summarise them): the first wakes of a mode "
                + "were over-represented among the slowest.";
    }

    /**
     * Unrecorded rounds (one item of each series) before the samples: the first wakes of a mode run on code the JIT
     * has not compiled yet and on connections that have not prepared their statements, and they were over-represented
     * among the slowest samples (docs/benchmarks.md, "The wake scenario's warm-up"). Their summary is reported apart.
     */
    static int warmUpRounds(Profile p) {
        return p.quick() ? 2 : 25;
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samplesPerQueue", p.wakeSamples());
        m.put("warmUpRounds", warmUpRounds(p));
        m.put("gapMillis", List.of(10, 30));
        return m;
    }

    /**
     * One dispatcher per queue on {@code p}: each acks what it fetched (an orchestration completes in its first
     * turn) and reports the moment its fetch returned on {@code workerSeen} / {@code orchSeen}.
     */
    static void startDispatchers(Workers dispatchers, String prefix, Mode mode, OrchestrationProvider p,
                                 Duration lock, String name, BlockingQueue<Long> workerSeen,
                                 BlockingQueue<Long> orchSeen) {
        dispatchers.start(prefix + "-worker", 1, i -> () -> {
            Optional<FetchedWorkItem> f = mode.pollWork(p, lock);
            if (f.isPresent()) {
                long at = System.nanoTime();
                p.ackWorkItem(f.get().lockToken(), null);
                workerSeen.put(at);
            }
        });
        dispatchers.start(prefix + "-orch", 1, i -> () -> {
            Optional<FetchedOrchestration> f = mode.pollOrchestration(p, lock);
            if (f.isPresent()) {
                long at = System.nanoTime();
                FetchedOrchestration turn = f.get();
                p.ackOrchestrationItem(turn.lockToken(), turn.item().executionId(),
                        List.of(Events.orchestrationStarted(1, name, "1.0.0", "{}"),
                                Events.orchestrationCompleted(2, "null")),
                        List.of(), List.of(),
                        ExecutionMetadata.of(name, "1.0.0").withStatus(ExecutionMetadata.COMPLETED, "null"),
                        List.of());
                orchSeen.put(at);
            }
        });
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        int samples = ctx.profile().wakeSamples();
        LatencyRecorder worker = new LatencyRecorder();
        LatencyRecorder orchestrator = new LatencyRecorder();
        LatencyRecorder remoteWorker = new LatencyRecorder();
        LatencyRecorder remoteClaiming = new LatencyRecorder();
        LatencyRecorder idleClaim = new LatencyRecorder();
        LatencyRecorder warmUpSamples = new LatencyRecorder();
        BlockingQueue<Long> workerSeen = new ArrayBlockingQueue<>(4);
        BlockingQueue<Long> orchSeen = new ArrayBlockingQueue<>(4);
        AtomicLong negative = new AtomicLong();
        // The slowest cross-process samples, each with its place in the series and when it was sent.
        SlowestSamples<Sent> remoteSlowest = new SlowestSamples<>(8);
        int remoteSent = 0;
        long phaseStart = 0;
        Workers dispatchers = new Workers();
        Map<String, Long> signals0;
        Map<String, Long> signals;
        String prefix = "wake-" + mode.key() + "-";
        boolean across = !Boolean.getBoolean("pgdurable.bench.noHandOverAcross");
        try (Hub hub = ctx.hub(name(), mode, 4, b -> b.handOverAcrossProcesses(across));
             PostgresProvider other = PostgresProvider.create(hub.provider().config().toBuilder().longPolling(false)
                     .migrationPolicy(MigrationPolicy.VERIFY_ONLY).poolSize(2).build());
             PostgresProvider plain = PostgresProvider.create(hub.provider().config().toBuilder().longPolling(false)
                     .handOverAcrossProcesses(false).migrationPolicy(MigrationPolicy.VERIFY_ONLY).poolSize(2)
                     .build());
             Workers.Stopping stopFirst = dispatchers.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            startDispatchers(dispatchers, "wake", mode, p, LOCK, NAME, workerSeen, orchSeen);
            hub.awaitParked(2, 10_000);
            int warmUp = 4 * warmUpRounds(ctx.profile());
            signals0 = null;
            for (int i = 0; i < warmUp + 4 * samples; i++) {
                if (i == warmUp) {
                    signals0 = hub.signals().snapshot();
                    phaseStart = System.nanoTime();
                }
                Pause.sleepRandom(10, 30);
                dispatchers.check();
                boolean toWorker = i % 4 != 1;
                boolean fromOther = i % 4 == 2;
                boolean fromPlain = i % 4 == 3;
                long sent;
                if (toWorker) {
                    (fromOther ? other : fromPlain ? plain : p)
                            .enqueueForWorker(new WorkItem.ActivityExecute("wake", 1, i, NAME, "{}"));
                    sent = System.nanoTime();
                } else {
                    p.enqueueForOrchestrator(new WorkItem.StartOrchestration(prefix + i, NAME, "{}", "1.0.0"), null);
                    sent = System.nanoTime();
                }
                Long seen = (toWorker ? workerSeen : orchSeen).poll(40, TimeUnit.SECONDS);
                if (seen == null) {
                    throw new IllegalStateException("wake: item " + i + " was not fetched within 40 s");
                }
                long latency = seen - sent;
                if (i < warmUp) {
                    warmUpSamples.recordNanos(latency);
                    continue;
                }
                if (latency < 0) {
                    negative.incrementAndGet();
                }
                (fromOther ? remoteWorker : fromPlain ? remoteClaiming : toWorker ? worker : orchestrator)
                        .recordNanos(latency);
                if (fromOther) {
                    remoteSlowest.offer(latency, new Sent(remoteSent++, sent - phaseStart));
                }
                if ((i + 1 - warmUp) % 400 == 0) {
                    ctx.progress().line("wake: %s, %d/%d samples", mode.key(), i + 1 - warmUp, 4 * samples);
                }
            }
            signals = CountingSignals.delta(signals0, hub.signals().snapshot());
            measureIdleClaims(p, other, samples, idleClaim);
            dispatchers.stop();
        } finally {
            dispatchers.stop();
            dispatchers.join();
        }
        ModeResult r = new ModeResult(mode)
                .latency("worker", worker)
                .latency("orchestrator", orchestrator)
                .latency("workerFromOtherProvider", remoteWorker)
                .latency("workerFromOtherProviderClaiming", remoteClaiming)
                .latency("idleClaim", idleClaim)
                .detail("warmUpRounds", warmUpRounds(ctx.profile()))
                .detail("warmUpSamples", warmUpSamples.summary().toJson())
                .detail("negativeSamples", negative.get())
                .detail("slowestFromOtherProvider", slowest(remoteSlowest))
                .detail("handOverAcrossProcesses", across);
        if (mode == Mode.LONG) {
            r.detail("longPollSignals", signals);
        }
        return r;
    }

    /** A cross-process sample's place in its series and when it was sent (nanoseconds after the series began). */
    record Sent(int sample, long atNanos) {}

    /**
     * The slowest samples of a series, slowest first, each with its place in the series and when it was sent
     * (seconds after the series began): tells a warm-up tail (early samples) from a scattered one.
     */
    static List<Map<String, Object>> slowest(SlowestSamples<Sent> kept) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (SlowestSamples.Sample<Sent> s : kept.slowestFirst()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("sample", s.detail().sample());
            m.put("sentAtSeconds", Num.round(s.detail().atNanos() / 1e9));
            m.put("millis", Num.round(s.value() / 1e6));
            out.add(m);
        }
        return out;
    }

    /**
     * The floor under every wake on this machine: a claim that finds its item at once, sent on a pool connection
     * that sat idle for 10-30 ms, as a parked dispatcher's does. A wake can be no faster than this round trip.
     */
    private static void measureIdleClaims(OrchestrationProvider p, OrchestrationProvider other, int samples,
                                          LatencyRecorder idleClaim) {
        for (int i = 0; i < samples; i++) {
            other.enqueueForWorker(new WorkItem.ActivityExecute("idle-claim", 1, i, NAME, "{}", null, IDLE_CLAIM_TAG));
            Pause.sleepRandom(10, 30);
            long start = System.nanoTime();
            Optional<FetchedWorkItem> f = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.tags(IDLE_CLAIM_TAG));
            long took = System.nanoTime() - start;
            if (f.isEmpty()) {
                throw new IllegalStateException("wake: the idle-claim item " + i + " was not claimable");
            }
            idleClaim.recordNanos(took);
            p.ackWorkItem(f.get().lockToken(), null);
        }
    }
}
