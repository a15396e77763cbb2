package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsRequest;
import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EventRaisedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionResumedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionSuspendedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionTerminatedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.RestartInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationState;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstanceFilter;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryInstancesResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.RaiseEventRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ResumeRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionRewoundEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.SuspendRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.TerminateRequest;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import io.grpc.StatusException;
import io.pgdurable.spi.CustomStatus;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.InstanceInfo;
import io.pgdurable.spi.ProviderException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The client half of the protocol: starting, inspecting, signalling, querying and purging instances. Messages go
 * through {@link OrchestrationProvider#enqueueForOrchestrator}; reads and purges through {@link ProviderAdmin}.
 * An instance exists for the provider from its first committed turn on; before that (a start still queued, or
 * scheduled for later) a read answers "not found", which the 1.5.0 client reports as an instance not found.
 */
final class InstanceClient {
    /** Page size of a query that names none. */
    static final int DEFAULT_PAGE = 100;

    private final OrchestrationProvider provider;
    private final ProviderAdmin admin;
    private final InstanceWatch watch;
    private final SidecarConfig config;
    private final Clock clock;

    InstanceClient(OrchestrationProvider provider, InstanceWatch watch, SidecarConfig config, Clock clock) {
        this.provider = provider;
        this.admin = provider.asManagementCapability().orElseThrow(() -> new IllegalArgumentException(
                "the Durable Task sidecar needs a provider with the management capability"));
        this.watch = watch;
        this.config = config;
        this.clock = clock;
    }

    CreateInstanceResponse start(CreateInstanceRequest r) throws StatusException {
        if (r.getName().isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("an orchestration name is required").asException();
        }
        String id = r.getInstanceId().isEmpty() ? UUID.randomUUID().toString().replace("-", "") : r.getInstanceId();
        Optional<InstanceInfo> existing = info(id);
        if (existing.isPresent() && !state(existing.get()).isTerminal()) {
            throw Status.ALREADY_EXISTS.withDescription("orchestration instance '" + id + "' already exists and "
                    + "has not finished").asException();
        }
        Instant now = clock.instant();
        ExecutionStartedEvent.Builder s = ExecutionStartedEvent.newBuilder().setName(r.getName())
                .setOrchestrationInstance(OrchestrationInstance.newBuilder().setInstanceId(id)
                        .setExecutionId(DtEvents.string(TurnApplier.newExecutionId())));
        if (r.hasVersion()) {
            s.setVersion(r.getVersion());
        }
        if (r.hasInput()) {
            s.setInput(r.getInput());
        }
        s.putAllTags(r.getTagsMap());
        Duration delay = null;
        if (r.hasScheduledStartTimestamp()) {
            s.setScheduledStartTimestamp(r.getScheduledStartTimestamp());
            long wait = DtEvents.ceilMillis(r.getScheduledStartTimestamp()) - now.toEpochMilli();
            delay = wait > 0 ? Duration.ofMillis(wait) : null;
        }
        provider.enqueueForOrchestrator(DtMessages.start(id,
                DtEvents.event(DtEvents.NO_ID, now).setExecutionStarted(s).build(), 0), delay);
        return CreateInstanceResponse.newBuilder().setInstanceId(id).build();
    }

    GetInstanceResponse get(String id, boolean withInputsAndOutputs) {
        Optional<InstanceInfo> info = info(id);
        if (info.isEmpty()) {
            return GetInstanceResponse.newBuilder().setExists(false).build();
        }
        return GetInstanceResponse.newBuilder().setExists(true)
                .setOrchestrationState(toState(info.get(), withInputsAndOutputs)).build();
    }

    /** Blocks until the instance has started (any status but pending), for as long as the call's deadline allows. */
    GetInstanceResponse waitForStart(String id, boolean withInputsAndOutputs) throws StatusException {
        return waitUntil(id, withInputsAndOutputs, r -> r.getExists()
                && r.getOrchestrationState().getOrchestrationStatus()
                != OrchestrationStatus.ORCHESTRATION_STATUS_PENDING);
    }

    GetInstanceResponse waitForCompletion(String id, boolean withInputsAndOutputs) throws StatusException {
        return waitUntil(id, withInputsAndOutputs, r -> r.getExists()
                && DtState.isTerminal(r.getOrchestrationState().getOrchestrationStatus()));
    }

    /**
     * Re-reads the status whenever the instance is signalled (a turn here or, with a status channel, on any
     * sidecar changed it) and otherwise every {@code waitFallback}; ends with the call's deadline or cancellation.
     */
    private GetInstanceResponse waitUntil(String id, boolean withIo, Predicate<GetInstanceResponse> done)
            throws StatusException {
        return waitUntil(id, withIo, done, Context.current().getDeadline());
    }

    private GetInstanceResponse waitUntil(String id, boolean withIo, Predicate<GetInstanceResponse> done,
                                          Deadline deadline) throws StatusException {
        Context ctx = Context.current();
        while (true) {
            CompletableFuture<Void> signal = watch.register(id);
            try {
                GetInstanceResponse r = get(id, withIo);
                if (done.test(r)) {
                    return r;
                }
                if (ctx.isCancelled()) {
                    throw Status.CANCELLED.withDescription("the wait was cancelled").asException();
                }
                Duration wait = config.waitFallback();
                if (deadline != null) {
                    long left = deadline.timeRemaining(TimeUnit.NANOSECONDS);
                    if (left <= 0) {
                        throw Status.DEADLINE_EXCEEDED.withDescription("instance '" + id + "' did not reach the "
                                + "awaited status in time").asException();
                    }
                    wait = wait.compareTo(Duration.ofNanos(left)) < 0 ? wait : Duration.ofNanos(left);
                }
                Context.CancellationListener onCancel = c -> signal.complete(null);
                ctx.addListener(onCancel, Runnable::run);
                try {
                    if (!InstanceWatch.await(signal, wait)) {
                        throw Status.CANCELLED.withDescription("interrupted").asException();
                    }
                } finally {
                    ctx.removeListener(onCancel);
                }
            } finally {
                watch.deregister(id, signal);
            }
        }
    }

    void raise(RaiseEventRequest r) throws StatusException {
        requireId(r.getInstanceId());
        EventRaisedEvent.Builder e = EventRaisedEvent.newBuilder().setName(r.getName());
        if (r.hasInput()) {
            e.setInput(r.getInput());
        }
        provider.enqueueForOrchestrator(DtMessages.toInstance(r.getInstanceId(), 0,
                DtEvents.event(DtEvents.NO_ID, clock.instant()).setEventRaised(e).build()), null);
    }

    void terminate(TerminateRequest r) throws StatusException {
        requireId(r.getInstanceId());
        ExecutionTerminatedEvent.Builder e = ExecutionTerminatedEvent.newBuilder();
        if (r.hasOutput()) {
            e.setInput(r.getOutput());
        }
        provider.enqueueForOrchestrator(DtMessages.terminate(r.getInstanceId(),
                DtEvents.event(DtEvents.NO_ID, clock.instant()).setExecutionTerminated(e).build(),
                r.getRecursive()), null);
    }

    void suspend(SuspendRequest r) throws StatusException {
        requireId(r.getInstanceId());
        ExecutionSuspendedEvent.Builder e = ExecutionSuspendedEvent.newBuilder();
        if (r.hasReason()) {
            e.setInput(r.getReason());
        }
        provider.enqueueForOrchestrator(DtMessages.toInstance(r.getInstanceId(), 0,
                DtEvents.event(DtEvents.NO_ID, clock.instant()).setExecutionSuspended(e).build()), null);
    }

    void resume(ResumeRequest r) throws StatusException {
        requireId(r.getInstanceId());
        ExecutionResumedEvent.Builder e = ExecutionResumedEvent.newBuilder();
        if (r.hasReason()) {
            e.setInput(r.getReason());
        }
        provider.enqueueForOrchestrator(DtMessages.toInstance(r.getInstanceId(), 0,
                DtEvents.event(DtEvents.NO_ID, clock.instant()).setExecutionResumed(e).build()), null);
    }

    /**
     * One page of instances in instance-id order (the provider's: PostgreSQL's is the database collation's); the
     * continuation token is the last id of the page. The provider has no Durable Task query, so this reads ids a chunk
     * at a time from the continuation on, and then each candidate's row: a page with filters that few instances match
     * reads as many rows as it passes.
     */
    QueryInstancesResponse query(InstanceQuery q) {
        int page = q.getMaxInstanceCount() > 0 ? q.getMaxInstanceCount() : DEFAULT_PAGE;
        String after = q.hasContinuationToken() ? q.getContinuationToken().getValue() : "";
        String prefix = q.hasInstanceIdPrefix() ? q.getInstanceIdPrefix().getValue() : "";
        StatusFilter statuses = StatusFilter.of(q.getRuntimeStatusList());
        QueryInstancesResponse.Builder out = QueryInstancesResponse.newBuilder();
        String last = null;
        for (String id : InstanceIds.after(admin, after, prefix)) {
            // Entities (@name@key) are instances of the provider but not orchestrations: listed only when asked by
            // prefix.
            if (EntityBatches.isEntityId(id) && !prefix.startsWith("@")) {
                continue;
            }
            if (out.getOrchestrationStateCount() >= page) {
                out.setContinuationToken(DtEvents.string(last));
                break;
            }
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty()) {
                continue; // purged meanwhile
            }
            OrchestrationState s = toState(info.get(), q.getFetchInputsAndOutputs());
            last = id;
            if (matches(s, statuses, q.hasCreatedTimeFrom() ? q.getCreatedTimeFrom() : null,
                    q.hasCreatedTimeTo() ? q.getCreatedTimeTo() : null)) {
                out.addOrchestrationState(s);
            }
        }
        return out.build();
    }

    /**
     * Deletes a finished instance, with its sub-orchestrations unless {@code keepChildren} (then they stay, as
     * instances of their own). An instance not found or not finished is not purged: the answer counts 0, as every
     * SDK's purge documents (1.5.0's included).
     */
    int purge(String id, boolean keepChildren) {
        Optional<InstanceInfo> info = info(id);
        if (info.isEmpty() || !state(info.get()).isTerminal()) {
            return 0;
        }
        return delete(id, keepChildren);
    }

    /**
     * Purges every finished instance matching the filter. With its sub-orchestrations, the candidates are root
     * instances (a matching child goes only with its root); with {@code keepChildren} every instance is a candidate
     * and goes alone.
     */
    int purge(PurgeInstanceFilter f, boolean keepChildren) {
        StatusFilter statuses = StatusFilter.of(f.getRuntimeStatusList());
        int deleted = 0;
        for (String id : admin.listInstances()) {
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty() || (!keepChildren && info.get().parentInstanceId().isPresent())) {
                continue;
            }
            OrchestrationState s = toState(info.get(), false);
            if (!DtState.isTerminal(s.getOrchestrationStatus())
                    || !matches(s, statuses, f.hasCreatedTimeFrom() ? f.getCreatedTimeFrom() : null,
                    f.hasCreatedTimeTo() ? f.getCreatedTimeTo() : null)) {
                continue;
            }
            deleted += delete(id, keepChildren);
        }
        return deleted;
    }

    private int delete(String id, boolean keepChildren) {
        return (int) (keepChildren ? admin.deleteInstancesKeepingChildren(List.of(id), true)
                : admin.deleteInstancesAtomic(admin.getInstanceTree(id).allIds(), true)).instancesDeleted();
    }

    /**
     * Deletes every instance of the hub, running or not. The schema itself stays: it is created and migrated by the
     * provider (or {@code pgdurable migrate}), not through the protocol.
     */
    int deleteAllInstances() {
        int deleted = 0;
        for (String id : admin.listInstances()) {
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty() || info.get().parentInstanceId().isPresent()) {
                continue; // deleted with its root
            }
            deleted += (int) admin.deleteInstancesAtomic(admin.getInstanceTree(id).allIds(), true)
                    .instancesDeleted();
        }
        return deleted;
    }

    // ------------------------------------------------------------------ reading

    private Optional<InstanceInfo> info(String id) {
        return find(admin, id);
    }

    /** The instance's row, or empty for the provider's "not found" (a retryable failure is thrown). */
    static Optional<InstanceInfo> find(ProviderAdmin admin, String id) {
        try {
            return Optional.of(admin.getInstanceInfo(id));
        } catch (ProviderException e) {
            if (e.retryable()) {
                throw e;
            }
            return Optional.empty();
        }
    }

    private static DtState state(InstanceInfo info) {
        DtState s = DtState.parse(info.status(), info.output().orElse(null));
        if (ExecutionMetadata.CONTINUED_AS_NEW.equals(info.status())) {
            // Between two executions: the next one starts with the message already queued.
            return s.withStatus(OrchestrationStatus.ORCHESTRATION_STATUS_RUNNING);
        }
        return s;
    }

    private OrchestrationState toState(InstanceInfo info, boolean withIo) {
        DtState s = state(info);
        OrchestrationState.Builder b = OrchestrationState.newBuilder().setInstanceId(info.instanceId())
                .setName(info.orchestrationName()).setOrchestrationStatus(s.status())
                .setCreatedTimestamp(DtEvents.timestampMillis(s.createdMs() > 0 ? s.createdMs()
                        : info.createdAtMs()))
                .setLastUpdatedTimestamp(DtEvents.timestampMillis(info.updatedAtMs()));
        String version = info.orchestrationVersion();
        if (version != null && !version.isEmpty() && !"unknown".equals(version)) {
            b.setVersion(DtEvents.string(version));
        }
        if (withIo) {
            if (s.input() != null) {
                b.setInput(DtEvents.string(s.input()));
            }
            if (s.output() != null) {
                b.setOutput(DtEvents.string(s.output()));
            }
        }
        if (s.failure() != null) {
            b.setFailureDetails(s.failure());
        }
        b.putAllTags(s.tags());
        provider.getCustomStatus(info.instanceId(), -1).flatMap(CustomStatus::value)
                .ifPresent(c -> b.setCustomStatus(DtEvents.string(c)));
        return b.build();
    }

    private static boolean matches(OrchestrationState s, StatusFilter statuses,
                                   com.google.protobuf.Timestamp from, com.google.protobuf.Timestamp to) {
        if (!statuses.matches(s.getOrchestrationStatus())) {
            return false;
        }
        Instant created = DtEvents.instant(s.getCreatedTimestamp());
        if (from != null && created.isBefore(DtEvents.instant(from))) {
            return false;
        }
        return to == null || !created.isAfter(DtEvents.instant(to));
    }

    /**
     * One page of instance ids in id order, optionally only those with the given statuses and (for finished
     * instances) completed within the given range. The key of the page's last id continues the listing.
     */
    ListInstanceIdsResponse listInstanceIds(ListInstanceIdsRequest r) {
        int page = r.getPageSize() > 0 ? r.getPageSize() : DEFAULT_PAGE;
        String after = r.hasLastInstanceKey() ? r.getLastInstanceKey().getValue() : "";
        StatusFilter statuses = StatusFilter.of(r.getRuntimeStatusList());
        Instant from = r.hasCompletedTimeFrom() ? DtEvents.instant(r.getCompletedTimeFrom()) : null;
        Instant to = r.hasCompletedTimeTo() ? DtEvents.instant(r.getCompletedTimeTo()) : null;
        ListInstanceIdsResponse.Builder out = ListInstanceIdsResponse.newBuilder();
        String last = null;
        for (String id : InstanceIds.after(admin, after, "")) {
            if (out.getInstanceIdsCount() >= page) {
                out.setLastInstanceKey(DtEvents.string(last));
                break;
            }
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty()) {
                continue;
            }
            last = id;
            DtState s = state(info.get());
            if (!statuses.matches(s.status())) {
                continue;
            }
            if (from != null || to != null) {
                if (!s.isTerminal()) {
                    continue;
                }
                Instant completed = Instant.ofEpochMilli(info.get().updatedAtMs());
                if ((from != null && completed.isBefore(from)) || (to != null && completed.isAfter(to))) {
                    continue;
                }
            }
            out.addInstanceIds(id);
        }
        return out.build();
    }

    /**
     * {@link #listInstanceIds} for Dapr's fork of the protocol, which names the paging fields differently and lists
     * every id when no page size is given. Its continuation token is upstream's last instance key.
     */
    ListInstanceIDsResponse listInstanceIds(ListInstanceIDsRequest r) {
        ListInstanceIdsRequest.Builder upstream = ListInstanceIdsRequest.newBuilder()
                .setPageSize(r.getPageSize() == 0 ? Integer.MAX_VALUE
                        : (int) Math.min(Integer.MAX_VALUE, Integer.toUnsignedLong(r.getPageSize())));
        if (r.hasContinuationToken()) {
            upstream.setLastInstanceKey(DtEvents.string(r.getContinuationToken()));
        }
        ListInstanceIdsResponse page = listInstanceIds(upstream.build());
        ListInstanceIDsResponse.Builder out = ListInstanceIDsResponse.newBuilder()
                .addAllInstanceIds(page.getInstanceIdsList());
        if (page.hasLastInstanceKey()) {
            out.setContinuationToken(page.getLastInstanceKey().getValue());
        }
        return out.build();
    }

    /**
     * Asks the instance's worker to rewind its failed execution (see {@link Rewind}). Refused unless the
     * instance exists and is FAILED; refused as well when a sub-orchestration's failure is part of it, since rewinding
     * means rewinding that child too and routing its new result to the parent's new execution, which this sidecar
     * does not do (restart such an instance instead).
     */
    void rewind(RewindInstanceRequest r) throws StatusException {
        String id = r.getInstanceId();
        requireId(id);
        if (EntityBatches.isEntityId(id)) {
            throw Status.INVALID_ARGUMENT.withDescription("'" + id + "' is an entity, not an orchestration; "
                    + "entities cannot be rewound").asException();
        }
        Optional<InstanceInfo> info = info(id);
        if (info.isEmpty()) {
            throw Status.NOT_FOUND.withDescription("orchestration instance '" + id + "' not found").asException();
        }
        DtState s = state(info.get());
        if (s.status() != OrchestrationStatus.ORCHESTRATION_STATUS_FAILED) {
            throw Status.FAILED_PRECONDITION.withDescription("orchestration instance '" + id + "' is "
                    + DtState.shortName(s.status()) + ", not FAILED: only a failed instance can be rewound")
                    .asException();
        }
        for (HistoryEvent h : currentHistory(id)) {
            if (h.hasSubOrchestrationInstanceFailed()) {
                throw Status.FAILED_PRECONDITION.withDescription("orchestration instance '" + id + "' failed with a "
                        + "failed sub-orchestration; rewinding sub-orchestrations is not supported by the pgdurable "
                        + "sidecar (RestartInstance starts it afresh)").asException();
            }
        }
        ExecutionRewoundEvent.Builder e = ExecutionRewoundEvent.newBuilder();
        if (r.hasReason()) {
            e.setReason(r.getReason());
        }
        provider.enqueueForOrchestrator(DtMessages.toInstance(id, 0,
                DtEvents.event(DtEvents.NO_ID, clock.instant()).setExecutionRewound(e).build()), null);
        // Callers read the status right after the call (the SDKs wait for completion next, which would return the
        // FAILED status at once), so the answer waits until a worker has taken the rewind up, boundedly: without a
        // worker that can rewind, the request stays queued and the status stays FAILED.
        Deadline limit = Deadline.after(REWIND_WAIT.toNanos(), TimeUnit.NANOSECONDS);
        Deadline callDeadline = Context.current().getDeadline();
        if (callDeadline != null && callDeadline.isBefore(limit)) {
            limit = callDeadline;
        }
        try {
            waitUntil(id, false, g -> !g.getExists() || g.getOrchestrationState().getOrchestrationStatus()
                    != OrchestrationStatus.ORCHESTRATION_STATUS_FAILED, limit);
        } catch (StatusException notYet) {
            if (notYet.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED) {
                throw notYet;
            }
        }
    }

    /** How long {@link #rewind} waits for a worker to take the rewind up before it answers anyway. */
    static final Duration REWIND_WAIT = Duration.ofSeconds(10);

    /** The history of the instance's current execution, in event order; NOT_FOUND for an unknown instance. */
    List<HistoryEvent> history(String id) throws StatusException {
        requireId(id);
        if (info(id).isEmpty()) {
            throw Status.NOT_FOUND.withDescription("orchestration instance '" + id + "' not found").asException();
        }
        return currentHistory(id);
    }

    /** The Durable Task events of an existing instance's current execution. */
    private List<HistoryEvent> currentHistory(String id) {
        List<HistoryEvent> out = new ArrayList<>();
        for (io.pgdurable.spi.Event e : admin.readHistoryWithExecutionId(id, admin.latestExecutionId(id))) {
            DtEvents.fromEvent(e).ifPresent(out::add);
        }
        return out;
    }

    /**
     * Starts the instance again from its original name, version, input and tags: under a new id, or under the same
     * id once it has finished (a running instance is refused: its history would be lost under it).
     */
    CreateInstanceResponse restart(RestartInstanceRequest r) throws StatusException {
        requireId(r.getInstanceId());
        Optional<InstanceInfo> info = info(r.getInstanceId());
        if (info.isEmpty()) {
            throw Status.NOT_FOUND.withDescription("orchestration instance '" + r.getInstanceId() + "' not found")
                    .asException();
        }
        DtState s = state(info.get());
        if (!r.getRestartWithNewInstanceId() && !s.isTerminal()) {
            throw Status.FAILED_PRECONDITION.withDescription("orchestration instance '" + r.getInstanceId()
                    + "' has not finished (" + DtState.shortName(s.status()) + "); restart it under a new instance "
                    + "id, or terminate it first").asException();
        }
        ExecutionStartedEvent original = originalStart(r.getInstanceId());
        CreateInstanceRequest.Builder again = CreateInstanceRequest.newBuilder()
                .setName(original != null ? original.getName() : info.get().orchestrationName())
                .putAllTags(original != null ? original.getTagsMap() : s.tags());
        if (!r.getRestartWithNewInstanceId()) {
            again.setInstanceId(r.getInstanceId());
        }
        if (original != null && original.hasVersion()) {
            again.setVersion(original.getVersion());
        }
        if (original != null && original.hasInput()) {
            again.setInput(original.getInput());
        } else if (s.input() != null) {
            again.setInput(DtEvents.string(s.input()));
        }
        return start(again.build());
    }

    /** The first execution's start event (its input is the one the instance was created with), if still stored. */
    private ExecutionStartedEvent originalStart(String id) {
        List<Long> executions = admin.listExecutions(id);
        if (executions.isEmpty()) {
            return null;
        }
        long first = executions.stream().mapToLong(Long::longValue).min().getAsLong();
        for (io.pgdurable.spi.Event e : admin.readHistoryWithExecutionId(id, first)) {
            Optional<HistoryEvent> h = DtEvents.fromEvent(e);
            if (h.isPresent() && h.get().hasExecutionStarted()) {
                return h.get().getExecutionStarted();
            }
        }
        return null;
    }

    private static void requireId(String id) throws StatusException {
        if (id.isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("an instance id is required").asException();
        }
    }
}
