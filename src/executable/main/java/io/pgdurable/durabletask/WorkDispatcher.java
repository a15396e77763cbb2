package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.ServerCallStreamObserver;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
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
 * stream is open.
 *
 * <p>Items on a stream are tracked by the keys the worker answers with (the 1.5.0 worker sends no token): the
 * instance id for a turn, (instance id, task id) for an activity. Each item also carries a completion token, which
 * newer workers send back to abandon it. Leases are renewed while the worker holds them. When a stream ends,
 * everything it held is abandoned at once (lease expiry is the backstop for a worker that vanishes without its
 * connection closing).
 */
final class WorkDispatcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkDispatcher.class);
    private static final Duration RETRY_PAUSE = Duration.ofSeconds(1);

    private final OrchestrationProvider provider;
    private final TurnApplier applier;
    private final ProviderAdmin admin;
    private final InstanceWatch watch;
    private final SidecarConfig config;
    private final Set<WorkStream> streams = ConcurrentHashMap.newKeySet();
    private final Map<String, HeldTurn> turns = new ConcurrentHashMap<>();
    private final Map<ActivityKey, HeldActivity> activities = new ConcurrentHashMap<>();
    private final ScheduledExecutorService renewer;
    private final AtomicLong streamIds = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final ReentrantLock settleLock = new ReentrantLock();
    private final Condition settled = settleLock.newCondition();
    private final FailureLog fetchFailures = new FailureLog(LOG, "fetching work for the Durable Task workers");

    WorkDispatcher(OrchestrationProvider provider, InstanceWatch watch, SidecarConfig config, Clock clock) {
        this.provider = provider;
        this.applier = new TurnApplier(clock);
        this.admin = provider.asManagementCapability().orElseThrow(() -> new IllegalArgumentException(
                "the Durable Task sidecar needs a provider with the management capability"));
        this.watch = watch;
        this.config = config;
        this.renewer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "pgdurable-dt-renew");
            t.setDaemon(true);
            return t;
        });
        long every = Math.max(1, config.lockTimeout().toMillis() / 3);
        renewer.scheduleWithFixedDelay(this::renewAll, every, every, TimeUnit.MILLISECONDS);
    }

    record ActivityKey(String instance, int taskId) {}

    private record HeldTurn(TurnApplier.Turn turn, WorkStream stream, String token) {}

    private record HeldActivity(String lockToken, long executionId, WorkStream stream, String token) {}

    private record HeldEntity(EntityBatches.Batch batch, WorkStream stream, String token) {}

    /** Entity batches out with the workers, by completion token (the only key a batch result carries). */
    private final Map<String, HeldEntity> entities = new ConcurrentHashMap<>();

    /** Completion token → the key its item is held under ({@code String} instance or {@link ActivityKey}). */
    private final Map<String, Object> tokens = new ConcurrentHashMap<>();
    private final AtomicLong tokenSeq = new AtomicLong();

    /** Upper bound on a worker's declared concurrency: more would only age leases in its inbox. */
    static final int MAX_CONCURRENCY = 1_000;

    /** Starts serving a worker's stream; returns at once. */
    void open(GetWorkItemsRequest request, ServerCallStreamObserver<WorkItem> observer) {
        if (closed.get()) {
            observer.onError(Status.UNAVAILABLE.withDescription("the sidecar is stopping").asException());
            return;
        }
        String agent = WorkerAgent.current();
        WorkStream s = new WorkStream(streamIds.incrementAndGet(), observer,
                WorkerAgent.slots(request.getMaxConcurrentOrchestrationWorkItems(), agent),
                WorkerAgent.slots(request.getMaxConcurrentActivityWorkItems(), agent));
        observer.setOnCancelHandler(() -> drop(s, "the worker disconnected"));
        streams.add(s);
        s.start();
        LOG.info("worker stream {} opened ({} open; up to {} turn(s) and {} activity item(s) at a time)", s.id,
                streams.size(), s.orchestrationLimit, s.activityLimit);
    }

    private String newToken(WorkStream s, Object key) {
        String token = s.id + "-" + tokenSeq.incrementAndGet();
        tokens.put(token, key);
        return token;
    }

    /**
     * Releases an item the worker will not run (it rejected it, e.g. a version it does not serve): its lease ends
     * now, so it is fetched again at once, and the stream's slot is free for other work. An unknown token (the item
     * was completed, or its stream ended) is a no-op: the item is released either way.
     */
    void abandon(String token) {
        if (token.isEmpty()) {
            throw new IllegalArgumentException("a completion token is required");
        }
        HeldEntity entity = entities.remove(token);
        if (entity != null) {
            abandonQuietly(entity.batch.lockToken, null);
            entity.stream.orchestrationSlot.release();
            settled();
            LOG.debug("entity {}: the worker abandoned its batch", entity.batch.instance);
            return;
        }
        Object key = tokens.remove(token);
        if (key instanceof String instance) {
            HeldTurn held = turns.get(instance);
            if (held != null && held.token.equals(token) && turns.remove(instance, held)) {
                abandonQuietly(held.turn.lockToken, null);
                held.stream.orchestrationSlot.release();
                settled();
                LOG.debug("instance {}: the worker abandoned its turn", instance);
            }
        } else if (key instanceof ActivityKey ak) {
            HeldActivity held = activities.get(ak);
            if (held != null && held.token.equals(token) && activities.remove(ak, held)) {
                abandonActivityQuietly(held.lockToken);
                held.stream.activitySlot.release();
                settled();
                LOG.debug("activity #{} of {}: the worker abandoned it", ak.taskId(), ak.instance());
            }
        }
    }

    int openStreams() {
        return streams.size();
    }

    int heldItems() {
        return turns.size() + activities.size() + entities.size();
    }

    // ------------------------------------------------------------------ completions from the worker

    void completeOrchestration(OrchestratorResponse response) throws StatusException {
        HeldTurn held = turns.remove(response.getInstanceId());
        if (held != null) {
            tokens.remove(held.token);
        }
        if (held == null) {
            // Its stream ended and the turn was abandoned (it runs again); an error would only make the 1.5.0
            // worker drop its stream and pause for 5 s.
            LOG.info("ignoring a late orchestrator result for {}: the turn is no longer held here",
                    response.getInstanceId());
            return;
        }
        // The slot is freed only after the commit: a fetch started earlier would find the instance still locked
        // and park until the fallback probe, instead of seeing the messages this turn sends to itself.
        try {
            TurnApplier.Ack ack;
            try {
                ack = applier.complete(held.turn, response);
            } catch (RuntimeException e) {
                abandonQuietly(held.turn.lockToken, Duration.ofSeconds(1));
                LOG.error("instance {}: could not apply the worker's actions", held.turn.instance, e);
                throw Status.INTERNAL.withDescription("could not apply the actions: " + e.getMessage())
                        .asException();
            }
            commit(ack, held.turn.instance);
        } finally {
            held.stream.orchestrationSlot.release();
            settled();
        }
    }

    private void commit(TurnApplier.Ack ack, String instance) throws StatusException {
        try {
            provider.ackOrchestrationItem(ack.lockToken(), ack.executionId(), ack.historyDelta(), ack.workerItems(),
                    ack.orchestratorItems(), ack.metadata(), ack.cancelledActivities());
        } catch (ProviderException e) {
            if (e.retryable()) {
                abandonQuietly(ack.lockToken(), null);
                throw Status.UNAVAILABLE.withDescription("could not commit the turn of " + instance + ": "
                        + e.getMessage()).withCause(e).asException();
            }
            // Most often the lease was lost (expired, or the instance was purged): the turn runs again elsewhere.
            LOG.warn("instance {}: the turn was not committed: {}", instance, e.getMessage());
            abandonQuietly(ack.lockToken(), Duration.ofSeconds(1));
            return;
        }
        if (ack.statusChanged()) {
            watch.signal(instance);
        }
    }

    /**
     * Commits an entity batch: the new state, the responses to calling orchestrations, the entity's own signals and
     * starts. A result that reports a failure of the whole batch (not of an operation) releases the batch to run
     * again a second later, as the SDKs expect.
     */
    void completeEntity(EntityBatchResult result) throws StatusException {
        if (result.getCompletionToken().isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("an entity batch result needs its work item's "
                    + "completionToken").asException();
        }
        HeldEntity held = entities.remove(result.getCompletionToken());
        if (held == null) {
            LOG.info("ignoring a late entity batch result: the batch is no longer held here");
            return;
        }
        EntityBatches.Batch b = held.batch;
        try {
            if (result.hasFailureDetails()) {
                LOG.warn("entity {}: the worker failed the batch ({}); it runs again", b.instance,
                        EntityBatches.describe(result.getFailureDetails()));
                abandonQuietly(b.lockToken, Duration.ofSeconds(1));
                return;
            }
            EntityBatches.Ack ack;
            try {
                ack = EntityBatches.complete(b, result, java.time.Instant.now());
            } catch (RuntimeException e) {
                abandonQuietly(b.lockToken, Duration.ofSeconds(1));
                throw Status.INVALID_ARGUMENT.withDescription("entity " + b.instance + ": " + e.getMessage())
                        .asException();
            }
            commitEntity(ack, b.instance);
        } finally {
            held.stream.orchestrationSlot.release();
            settled();
        }
    }

    /** An entity batch's ack: an entity is always at its first execution and never changes a watched status. */
    private void commitEntity(EntityBatches.Ack ack, String entity) throws StatusException {
        commit(new TurnApplier.Ack(ack.lockToken(), 1, List.of(), List.of(), ack.orchestratorItems(),
                ack.metadata(), List.of(), false), entity);
    }

    void completeActivity(ActivityResponse response) throws StatusException {
        ActivityKey key = new ActivityKey(response.getInstanceId(), response.getTaskId());
        HeldActivity held = activities.remove(key);
        if (held != null) {
            tokens.remove(held.token);
        }
        if (held == null) {
            LOG.info("ignoring a late result of activity #{} of {}: it is no longer held here",
                    response.getTaskId(), response.getInstanceId());
            return;
        }
        try {
            ackActivity(held, response);
        } finally {
            held.stream.activitySlot.release();
            settled();
        }
    }

    private void ackActivity(HeldActivity held, ActivityResponse response) throws StatusException {
        HistoryEvent.Builder e = DtEvents.event(DtEvents.NO_ID, java.time.Instant.now());
        if (response.hasFailureDetails()) {
            e.setTaskFailed(TaskFailedEvent.newBuilder().setTaskScheduledId(response.getTaskId())
                    .setFailureDetails(response.getFailureDetails()));
        } else {
            TaskCompletedEvent.Builder ok = TaskCompletedEvent.newBuilder().setTaskScheduledId(response.getTaskId());
            if (response.hasResult()) {
                ok.setResult(response.getResult());
            }
            e.setTaskCompleted(ok);
        }
        try {
            provider.ackWorkItem(held.lockToken, DtMessages.toInstance(response.getInstanceId(), held.executionId,
                    e.build()));
        } catch (ProviderException ex) {
            if (ex.retryable()) {
                abandonActivityQuietly(held.lockToken);
                throw Status.UNAVAILABLE.withDescription("could not record the activity result: "
                        + ex.getMessage()).withCause(ex).asException();
            }
            // The lease was lost (expired and taken by another worker, or the orchestration was purged or
            // finished and cancelled it): that other attempt's result is the one that counts.
            LOG.warn("activity #{} of {}: result discarded: {}", response.getTaskId(), response.getInstanceId(),
                    ex.getMessage());
        }
    }

    // ------------------------------------------------------------------ streams and their lanes

    private final class WorkStream {
        final long id;
        final ServerCallStreamObserver<WorkItem> observer;
        final int orchestrationLimit;
        final int activityLimit;
        final Semaphore orchestrationSlot;
        final Semaphore activitySlot;
        final AtomicBoolean open = new AtomicBoolean(true);
        final List<Thread> lanes = new java.util.concurrent.CopyOnWriteArrayList<>();

        WorkStream(long id, ServerCallStreamObserver<WorkItem> observer, int orchestrationLimit, int activityLimit) {
            this.id = id;
            this.observer = observer;
            this.orchestrationLimit = orchestrationLimit;
            this.activityLimit = activityLimit;
            this.orchestrationSlot = new Semaphore(orchestrationLimit);
            this.activitySlot = new Semaphore(activityLimit);
        }

        void start() {
            lanes.add(lane("orchestrations", orchestrationSlot, false, permits -> fetchTurn() ? 1 : 0));
            lanes.add(lane("activities", activitySlot, true, this::fetchActivities));
        }

        private Thread lane(String kind, Semaphore slot, boolean batched, java.util.function.IntUnaryOperator fetch) {
            Thread t = new Thread(() -> runLane(slot, batched, fetch), "pgdurable-dt-" + kind + "-" + id);
            t.setDaemon(true);
            t.start();
            return t;
        }

        /**
         * Takes a free slot, fetches and hands over; a batched lane takes every free slot and fills them with one
         * fetch, so a fan-out reaches the worker at once rather than one round trip after another.
         */
        private void runLane(Semaphore slot, boolean batched, java.util.function.IntUnaryOperator fetch) {
            try {
                while (open.get() && !closed.get()) {
                    slot.acquire();
                    int permits = 1 + (batched ? slot.drainPermits() : 0);
                    int handedOver = 0;
                    try {
                        if (!open.get()) {
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
                LOG.error("worker stream {}: a dispatch lane failed; closing the stream", id, e);
                drop(this, "a dispatch lane failed");
            }
        }

        /** One fetch; true when a turn was handed to the worker (its slot stays taken until the result). */
        private boolean fetchTurn() {
            Optional<FetchedOrchestration> f = provider.fetchOrchestrationItem(config.lockTimeout(),
                    config.pollTimeout(), null);
            if (f.isEmpty()) {
                idle();
                return false;
            }
            FetchedOrchestration fetched = f.get();
            if (EntityBatches.isEntityId(fetched.item().instance())) {
                return handEntityBatch(fetched);
            }
            if (fetched.item().historyError().isPresent()) {
                LOG.warn("instance {}: history cannot be read ({}); retrying later", fetched.item().instance(),
                        fetched.item().historyError().get());
                abandonQuietly(fetched.lockToken(), Duration.ofSeconds(5));
                return false;
            }
            TurnApplier.Turn turn;
            try {
                turn = applier.prepare(fetched);
            } catch (RuntimeException e) {
                LOG.warn("instance {}: cannot prepare the turn ({}); retrying later", fetched.item().instance(),
                        e.toString());
                abandonQuietly(fetched.lockToken(), Duration.ofSeconds(5));
                return false;
            }
            if (!turn.needsWorker()) {
                TurnApplier.Ack ack = applier.consumeOnly(turn);
                try {
                    commit(ack, turn.instance);
                } catch (StatusException e) {
                    LOG.debug("instance {}: consuming messages failed: {}", turn.instance, e.getMessage());
                }
                return false;
            }
            String token = newToken(this, turn.instance);
            HeldTurn mine = new HeldTurn(turn, this, token);
            HeldTurn previous = turns.put(turn.instance, mine);
            if (previous != null) {
                // Only possible when the earlier lease expired while its worker still held it: that worker's
                // answer can no longer be committed, so the new turn replaces it.
                tokens.remove(previous.token);
                previous.stream.orchestrationSlot.release();
                LOG.warn("instance {}: an earlier turn held by worker stream {} had lost its lease", turn.instance,
                        previous.stream.id);
            }
            if (!send(WorkItem.newBuilder().setOrchestratorRequest(turn.request).setCompletionToken(token).build())) {
                tokens.remove(token);
                if (turns.remove(turn.instance, mine)) {
                    abandonQuietly(turn.lockToken, null);
                    settled();
                }
                return false;
            }
            return true;
        }

        /** An entity's due operations as one batch for the worker; true when handed over. */
        private boolean handEntityBatch(FetchedOrchestration fetched) {
            String id = fetched.item().instance();
            Optional<ProviderAdmin.InstanceInfo> info; // empty: a new entity
            try {
                info = InstanceClient.find(admin, id);
            } catch (ProviderException retryable) {
                abandonQuietly(fetched.lockToken(), Duration.ofSeconds(1));
                throw retryable;
            }
            EntityBatches.Batch batch = EntityBatches.prepare(fetched, info.isPresent(),
                    info.flatMap(ProviderAdmin.InstanceInfo::output).orElse(null), java.time.Instant.now());
            if (batch.request == null) {
                // Only lock requests, unlocks or messages that wait for a lock: nothing for the worker.
                EntityBatches.Ack ack = EntityBatches.withoutWorker(batch);
                try {
                    commitEntity(ack, id);
                } catch (StatusException e) {
                    LOG.debug("entity {}: consuming messages failed: {}", id, e.getMessage());
                }
                return false;
            }
            String token = "entity-" + this.id + "-" + tokenSeq.incrementAndGet();
            HeldEntity mine = new HeldEntity(batch, this, token);
            entities.put(token, mine);
            if (!send(WorkItem.newBuilder().setEntityRequest(batch.request).setCompletionToken(token).build())) {
                if (entities.remove(token, mine)) {
                    abandonQuietly(batch.lockToken, null);
                    settled();
                }
                return false;
            }
            return true;
        }

        /** One fetch of up to {@code permits} activities; returns how many were handed to the worker. */
        private int fetchActivities(int permits) {
            List<FetchedWorkItem> fetched;
            if (permits == 1) {
                // The single-item fetch, as for a worker that declares no concurrency (1.5.0).
                fetched = provider.fetchWorkItem(config.lockTimeout(), config.pollTimeout(), null,
                        TagFilter.defaultOnly()).map(List::of).orElse(List.of());
            } else {
                fetched = provider.fetchWorkItems(config.lockTimeout(),
                        io.pgdurable.spi.WorkBatch.upTo(permits, config.pollTimeout()), null, TagFilter.defaultOnly());
            }
            if (fetched.isEmpty()) {
                idle();
                return 0;
            }
            int handed = 0;
            for (FetchedWorkItem f : fetched) {
                if (handActivity(f)) {
                    handed++;
                }
            }
            return handed;
        }

        private boolean handActivity(FetchedWorkItem fetched) {
            if (!(fetched.item() instanceof io.pgdurable.spi.WorkItem.ActivityExecute a)) {
                // Unreachable with this provider (only activities go to the worker queue); never drop it.
                abandonActivityQuietly(fetched.lockToken(), Duration.ofSeconds(30));
                return false;
            }
            ActivityRequest request;
            try {
                request = DtPayload.unwrap(a.input(), ActivityRequest.parser());
            } catch (IllegalArgumentException e) {
                // Not written by this sidecar (another runtime shares the schema?): leave it for its owner.
                LOG.warn("activity {} of {} is not a Durable Task activity ({}); releasing it", a.name(),
                        a.instance(), e.getMessage());
                abandonActivityQuietly(fetched.lockToken(), Duration.ofSeconds(30));
                return false;
            }
            ActivityKey key = new ActivityKey(a.instance(), (int) a.id());
            String token = newToken(this, key);
            HeldActivity held = new HeldActivity(fetched.lockToken(), a.executionId(), this, token);
            if (activities.putIfAbsent(key, held) != null) {
                tokens.remove(token);
                // The same task id of an earlier execution is still running: the worker's answer could not be told
                // apart, so this one waits.
                abandonActivityQuietly(fetched.lockToken(), Duration.ofSeconds(1));
                return false;
            }
            if (!send(WorkItem.newBuilder().setActivityRequest(request).setCompletionToken(token).build())) {
                tokens.remove(token);
                if (activities.remove(key, held)) {
                    abandonActivityQuietly(fetched.lockToken());
                    settled();
                }
                return false;
            }
            return true;
        }

        private void idle() {
            if (!config.longPolling()) {
                pause(config.shortPollInterval());
            }
        }

        /** Hands an item to the worker; false when the stream is gone. */
        private boolean send(WorkItem item) {
            synchronized (this) { // StreamObserver is not thread-safe; onNext only buffers, it does not block
                if (!open.get() || closed.get()) {
                    return false; // stopping: a fetch that returned meanwhile goes back, it is not new work to hand out
                }
                try {
                    observer.onNext(item);
                    return true;
                } catch (RuntimeException e) {
                    LOG.info("worker stream {}: sending failed ({}); closing it", id, e.toString());
                }
            }
            drop(this, "sending failed");
            return false;
        }

        /** Ends the stream for the worker (sidecar stopping). */
        void complete() {
            synchronized (this) {
                try {
                    observer.onCompleted();
                } catch (RuntimeException alreadyGone) {
                    // cancelled meanwhile
                }
            }
        }
    }

    private void pause(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops a stream's lanes and abandons everything it holds, so other workers get it at once. */
    private void drop(WorkStream s, String why) {
        if (!s.open.compareAndSet(true, false)) {
            return;
        }
        streams.remove(s);
        s.lanes.forEach(Thread::interrupt);
        int abandoned = 0;
        for (Map.Entry<String, HeldTurn> e : turns.entrySet()) {
            if (e.getValue().stream == s && turns.remove(e.getKey(), e.getValue())) {
                tokens.remove(e.getValue().token);
                abandonQuietly(e.getValue().turn.lockToken, null);
                abandoned++;
            }
        }
        for (Map.Entry<String, HeldEntity> e : entities.entrySet()) {
            if (e.getValue().stream == s && entities.remove(e.getKey(), e.getValue())) {
                abandonQuietly(e.getValue().batch.lockToken, null);
                abandoned++;
            }
        }
        for (Map.Entry<ActivityKey, HeldActivity> e : activities.entrySet()) {
            if (e.getValue().stream == s && activities.remove(e.getKey(), e.getValue())) {
                tokens.remove(e.getValue().token);
                abandonActivityQuietly(e.getValue().lockToken);
                abandoned++;
            }
        }
        LOG.info("worker stream {} closed ({}); {} item(s) it held abandoned; {} stream(s) open", s.id, why,
                abandoned, streams.size());
        settled();
    }

    private void abandonQuietly(String lockToken, Duration delay) {
        try {
            provider.abandonOrchestrationItem(lockToken, delay, false);
        } catch (ProviderException e) {
            LOG.debug("abandoning a turn failed (its lease ends on its own): {}", e.getMessage());
        }
    }

    private void abandonActivityQuietly(String lockToken) {
        abandonActivityQuietly(lockToken, null);
    }

    private void abandonActivityQuietly(String lockToken, Duration delay) {
        try {
            provider.abandonWorkItem(lockToken, delay, false);
        } catch (ProviderException e) {
            LOG.debug("abandoning an activity failed (its lease ends on its own): {}", e.getMessage());
        }
    }

    private void renewAll() {
        for (HeldTurn h : turns.values()) {
            try {
                provider.renewOrchestrationItemLock(h.turn.lockToken, config.lockTimeout());
            } catch (ProviderException e) {
                LOG.debug("renewing the turn of {} failed: {}", h.turn.instance, e.getMessage());
            }
        }
        for (HeldEntity h : entities.values()) {
            try {
                provider.renewOrchestrationItemLock(h.batch.lockToken, config.lockTimeout());
            } catch (ProviderException e) {
                LOG.debug("renewing the batch of entity {} failed: {}", h.batch.instance, e.getMessage());
            }
        }
        for (Map.Entry<ActivityKey, HeldActivity> e : activities.entrySet()) {
            try {
                provider.renewWorkItemLock(e.getValue().lockToken, config.lockTimeout());
            } catch (ProviderException ex) {
                LOG.debug("renewing activity #{} of {} failed: {}", e.getKey().taskId(), e.getKey().instance(),
                        ex.getMessage());
            }
        }
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
        int held = heldItems();
        if (held > 0) {
            LOG.info("stopping: {} item(s) out with the workers; waiting up to {} ms for their results", held,
                    config.shutdownGrace().toMillis());
        }
        long deadline = System.nanoTime() + config.shutdownGrace().toNanos();
        boolean interrupted = false;
        settleLock.lock();
        try {
            long left;
            while (heldItems() > 0 && (left = deadline - System.nanoTime()) > 0) {
                try {
                    // Woken by every result, abandon and dropped stream; the cap only bounds the cost of a
                    // path that lets go of an item without saying so.
                    settled.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(250)));
                } catch (InterruptedException e) {
                    interrupted = true;
                    break;
                }
            }
        } finally {
            settleLock.unlock();
        }
        if (heldItems() > 0) {
            LOG.info("stopping: the grace period ended with {} item(s) still out; abandoning them", heldItems());
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

    /** Wakes a stop waiting for the workers' results: an item was let go of. */
    private void settled() {
        settleLock.lock();
        try {
            settled.signalAll();
        } finally {
            settleLock.unlock();
        }
    }
}
