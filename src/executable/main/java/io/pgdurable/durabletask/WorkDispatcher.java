package io.pgdurable.durabletask;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.ServerCallStreamObserver;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntUnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds the workers' {@code GetWorkItems} streams from the provider and commits what they send back.
 *
 * <p>Each open stream has two lanes (threads): one fetches orchestration turns, one activities, each with a
 * long-polled fetch and at most as many items of its kind on the stream at a time as the worker declared in its
 * request ({@code maxConcurrentOrchestrationWorkItems}, {@code maxConcurrentActivityWorkItems}); a worker that
 * declares none gets one (the 1.5.0 worker runs one item at a time, so more would only age leases in its inbox), or
 * several when its gRPC library shows it runs items concurrently ({@link WorkerAgent}). Nothing is fetched while no
 * stream is open. What a lane fetches is handed over by {@link WorkFetcher}, what the worker answers committed by
 * {@link WorkResults}, and what the worker holds meanwhile kept by {@link HeldItems}. When a stream ends, everything
 * it held is abandoned at once (lease expiry is the backstop for a worker that vanishes without its connection
 * closing).
 */
final class WorkDispatcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkDispatcher.class);
    private static final Duration RETRY_PAUSE = Duration.ofSeconds(1);

    /** Upper bound on a worker's declared concurrency: more would only age leases in its inbox. */
    static final int MAX_CONCURRENCY = 1_000;

    private final SidecarConfig config;
    private final HeldItems held;
    private final WorkResults results;
    private final WorkFetcher fetcher;
    private final Set<WorkStream> streams = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService renewer;
    private final AtomicLong streamIds = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final FailureLog fetchFailures = new FailureLog(LOG, "fetching work for the Durable Task workers");

    WorkDispatcher(OrchestrationProvider provider, InstanceWatch watch, SidecarConfig config, Clock clock) {
        ProviderAdmin admin = provider.asManagementCapability().orElseThrow(() -> new IllegalArgumentException(
                "the Durable Task sidecar needs a provider with the management capability"));
        TurnApplier applier = new TurnApplier(clock);
        this.config = config;
        this.held = new HeldItems(provider, config.lockTimeout());
        this.results = new WorkResults(provider, applier, held, watch);
        this.fetcher = new WorkFetcher(provider, admin, applier, config, held, results);
        this.renewer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "pgdurable-dt-renew");
            t.setDaemon(true);
            return t;
        });
        long every = Math.max(1, config.lockTimeout().toMillis() / 3);
        renewer.scheduleWithFixedDelay(held::renewAll, every, every, TimeUnit.MILLISECONDS);
    }

    /** Starts serving a worker's stream; returns at once. */
    void open(GetWorkItemsRequest request, ServerCallStreamObserver<WorkItem> observer) {
        if (closed.get()) {
            observer.onError(Status.UNAVAILABLE.withDescription("the sidecar is stopping").asException());
            return;
        }
        int limit = config.limits().maxWorkerStreams();
        if (streams.size() >= limit) {
            // Each stream has two fetch threads: a flood of streams would be a flood of threads and fetches.
            observer.onError(Status.RESOURCE_EXHAUSTED.withDescription(limit + " worker streams are open already, "
                    + "the most this sidecar serves at a time (sidecar setting maxWorkerStreams)").asException());
            return;
        }
        String agent = WorkerAgent.current();
        WorkStream s = new WorkStream(streamIds.incrementAndGet(), observer,
                WorkerAgent.slots(request.getMaxConcurrentOrchestrationWorkItems(), agent),
                WorkerAgent.slots(request.getMaxConcurrentActivityWorkItems(), agent), this);
        observer.setOnCancelHandler(() -> drop(s, "the worker disconnected"));
        streams.add(s);
        s.lanes.add(lane(s, "orchestrations", s.orchestrationSlot, false, permits -> fetcher.fetchTurn(s) ? 1 : 0));
        s.lanes.add(lane(s, "activities", s.activitySlot, true, permits -> fetcher.fetchActivities(s, permits)));
        LOG.info("worker stream {} opened ({} open; up to {} turn(s) and {} activity item(s) at a time)", s.id,
                streams.size(), s.orchestrationLimit, s.activityLimit);
    }

    /** Releases an item the worker will not run, by its completion token (see {@link HeldItems#abandon}). */
    void abandon(String token) {
        if (token.isEmpty()) {
            throw new IllegalArgumentException("a completion token is required");
        }
        held.abandon(token);
    }

    void completeOrchestration(OrchestratorResponse response) throws StatusException {
        results.completeOrchestration(response);
    }

    void completeEntity(EntityBatchResult result) throws StatusException {
        results.completeEntity(result);
    }

    void completeActivity(ActivityResponse response) throws StatusException {
        results.completeActivity(response);
    }

    int openStreams() {
        return streams.size();
    }

    int heldItems() {
        return held.size();
    }

    boolean isClosed() {
        return closed.get();
    }

    // ------------------------------------------------------------------ lanes

    private Thread lane(WorkStream s, String kind, Semaphore slot, boolean batched, IntUnaryOperator fetch) {
        Thread t = new Thread(() -> runLane(s, slot, batched, fetch), "pgdurable-dt-" + kind + "-" + s.id);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * Takes a free slot, fetches and hands over; a batched lane takes every free slot and fills them with one
     * fetch, so a fan-out reaches the worker at once rather than one round trip after another.
     */
    private void runLane(WorkStream s, Semaphore slot, boolean batched, IntUnaryOperator fetch) {
        try {
            while (s.open.get() && !closed.get()) {
                slot.acquire();
                int permits = 1 + (batched ? slot.drainPermits() : 0);
                int handedOver = 0;
                try {
                    if (!s.open.get()) {
                        return;
                    }
                    handedOver = fetch.applyAsInt(permits);
                    fetchFailures.recovered();
                } catch (ProviderException e) {
                    fetchFailures.failed(e);
                    pause(RETRY_PAUSE);
                } finally {
                    if (permits > handedOver) {
                        slot.release(permits - handedOver);
                    }
                }
            }
        } catch (InterruptedException e) {
            // the stream ended
        } catch (RuntimeException e) {
            LOG.error("worker stream {}: a dispatch lane failed; closing the stream", s.id, e);
            drop(s, "a dispatch lane failed");
        }
    }

    static void pause(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops a stream's lanes and abandons everything it holds, so other workers get it at once. */
    void drop(WorkStream s, String why) {
        if (!s.open.compareAndSet(true, false)) {
            return;
        }
        streams.remove(s);
        s.lanes.forEach(Thread::interrupt);
        int abandoned = held.abandonAll(s);
        LOG.info("worker stream {} closed ({}); {} item(s) it held abandoned; {} stream(s) open", s.id, why,
                abandoned, streams.size());
    }

    /**
     * Stops handing out work, gives the workers up to {@code grace} to return what they hold (their results are
     * committed as usual meanwhile; the streams stay open so that the workers' connections do too), then ends their
     * streams and abandons the rest. Returns as soon as nothing is held, at the latest after about {@code grace}
     * plus a second.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<WorkStream> open = List.copyOf(streams);
        open.forEach(s -> s.lanes.forEach(Thread::interrupt));
        int holding = held.size();
        if (holding > 0) {
            LOG.info("stopping: {} item(s) out with the workers; waiting up to {} ms for their results", holding,
                    config.shutdownGrace().toMillis());
        }
        boolean interrupted = false;
        try {
            held.awaitNone(config.shutdownGrace());
        } catch (InterruptedException e) {
            interrupted = true;
        }
        if (held.size() > 0) {
            LOG.info("stopping: the grace period ended with {} item(s) still out; abandoning them", held.size());
        }
        for (WorkStream s : open) {
            s.complete();
            drop(s, "the sidecar is stopping");
        }
        renewer.shutdownNow();
        for (WorkStream s : open) {
            for (Thread t : s.lanes) {
                try {
                    t.join(1_000);
                } catch (InterruptedException e) {
                    interrupted = true;
                    break;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
