package io.pgdurable.durabletask;

import com.google.protobuf.GeneratedMessageV3;
import com.google.protobuf.UnknownFieldSet;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CreateInstanceRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.CreateInstanceResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.EventRaisedEvent;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ExecutionResumedEvent;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ExecutionStartedEvent;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ExecutionSuspendedEvent;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ExecutionTerminatedEvent;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.GetInstanceResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.InstanceQuery;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.OrchestrationInstance;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.OrchestrationState;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.OrchestrationStatus;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.PurgeInstanceFilter;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.QueryInstancesResponse;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.RaiseEventRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.ResumeRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.SuspendRequest;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.TerminateRequest;
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
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
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
    /** The field number of {@code recursive} in newer protocol versions of TerminateRequest and PurgeInstancesRequest. */
    private static final int RECURSIVE_FIELD = 3;

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
        Context ctx = Context.current();
        Deadline deadline = ctx.getDeadline();
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
                recursive(r)), null);
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
     * One page of instances in instance-id order; the continuation token is the last id of the page. The provider
     * has no Durable Task query, so this reads the id list and then each candidate's row: fine for operating a
     * hub, not for hot paths over very many instances.
     */
    QueryInstancesResponse query(InstanceQuery q) {
        int page = q.getMaxInstanceCount() > 0 ? q.getMaxInstanceCount() : DEFAULT_PAGE;
        String after = q.hasContinuationToken() ? q.getContinuationToken().getValue() : "";
        String prefix = q.hasInstanceIdPrefix() ? q.getInstanceIdPrefix().getValue() : "";
        Set<OrchestrationStatus> statuses = statusSet(q.getRuntimeStatusList());
        List<String> ids = new ArrayList<>(admin.listInstances());
        ids.removeIf(id -> !id.startsWith(prefix) || id.compareTo(after) <= 0);
        ids.sort(null);
        QueryInstancesResponse.Builder out = QueryInstancesResponse.newBuilder();
        String last = null;
        for (String id : ids) {
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

    /** Deletes a finished instance with its sub-orchestrations (the provider keeps no orphaned children). */
    int purge(String id) throws StatusException {
        Optional<InstanceInfo> info = info(id);
        if (info.isEmpty()) {
            return 0;
        }
        if (!state(info.get()).isTerminal()) {
            throw Status.FAILED_PRECONDITION.withDescription("instance '" + id + "' has not finished; terminate it "
                    + "first").asException();
        }
        return (int) admin.deleteInstancesAtomic(admin.getInstanceTree(id).allIds(), true).instancesDeleted();
    }

    /** Purges every finished root instance matching the filter, each with its sub-orchestrations. */
    int purge(PurgeInstanceFilter f) {
        Set<OrchestrationStatus> statuses = statusSet(f.getRuntimeStatusList());
        int deleted = 0;
        for (String id : admin.listInstances()) {
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty() || info.get().parentInstanceId().isPresent()) {
                continue;
            }
            OrchestrationState s = toState(info.get(), false);
            if (!DtState.isTerminal(s.getOrchestrationStatus())
                    || !matches(s, statuses, f.hasCreatedTimeFrom() ? f.getCreatedTimeFrom() : null,
                    f.hasCreatedTimeTo() ? f.getCreatedTimeTo() : null)) {
                continue;
            }
            deleted += (int) admin.deleteInstancesAtomic(admin.getInstanceTree(id).allIds(), true)
                    .instancesDeleted();
        }
        return deleted;
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
        try {
            return Optional.of(admin.getInstanceInfo(id));
        } catch (ProviderException e) {
            if (e.retryable()) {
                throw e;
            }
            return Optional.empty(); // the provider's "not found"
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
                .setCreatedTimestamp(DtEvents.timestampMillis(info.createdAtMs()))
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
        provider.getCustomStatus(info.instanceId(), -1).flatMap(CustomStatus::value)
                .ifPresent(c -> b.setCustomStatus(DtEvents.string(c)));
        return b.build();
    }

    private static boolean matches(OrchestrationState s, Set<OrchestrationStatus> statuses,
                                   com.google.protobuf.Timestamp from, com.google.protobuf.Timestamp to) {
        if (!statuses.isEmpty() && !statuses.contains(s.getOrchestrationStatus())) {
            return false;
        }
        Instant created = DtEvents.instant(s.getCreatedTimestamp());
        if (from != null && created.isBefore(DtEvents.instant(from))) {
            return false;
        }
        return to == null || !created.isAfter(DtEvents.instant(to));
    }

    private static Set<OrchestrationStatus> statusSet(List<OrchestrationStatus> list) {
        Set<OrchestrationStatus> set = EnumSet.noneOf(OrchestrationStatus.class);
        for (OrchestrationStatus s : list) {
            if (s != OrchestrationStatus.UNRECOGNIZED) {
                set.add(s);
            }
        }
        return set;
    }

    /** The {@code recursive} flag newer clients send (field 3); the 1.5.0 client never does. */
    static boolean recursive(GeneratedMessageV3 request) {
        UnknownFieldSet unknown = request.getUnknownFields();
        return unknown.hasField(RECURSIVE_FIELD)
                && unknown.getField(RECURSIVE_FIELD).getVarintList().stream().anyMatch(v -> v != 0);
    }

    private static void requireId(String id) throws StatusException {
        if (id.isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("an instance id is required").asException();
        }
    }
}
