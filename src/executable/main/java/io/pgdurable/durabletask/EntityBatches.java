package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityLockGrantedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityLockRequestedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationCalledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationFailedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationSignaledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityUnlockSentEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendSignalAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.StartNewOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailureDetails;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.WorkItem;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Durable entities on the provider, the pure half (no provider calls, like {@link TurnApplier}).
 *
 * <p>Mapping: an entity is a provider orchestration instance whose id is {@code @name@key} (the convention the SDKs
 * use; the name in lower case), with orchestration name = the entity name. Its state is the execution's output, a
 * JSON object ({@link Stored}: the state, the lock holder, messages waiting for the unlock); no history is written,
 * so an entity that has run a million operations is still one row. Each operation is an orchestrator-queue message (a
 * {@link WorkItem.QueueMessage} named after its event, the {@code EntityOperationSignaled}/{@code
 * EntityOperationCalled} event as payload), sent together with a {@link WorkItem.StartOrchestration} for the entity
 * so the provider accepts messages for an entity that does not exist yet (extra starts are ignored). The provider's
 * per-instance lock is what serialises an entity: one batch (all its visible messages) at a time, committed by one
 * ack that also sends the responses to calling orchestrations, lock grants, and the entity's own signals and starts.
 */
final class EntityBatches {
    private static final Logger LOG = LoggerFactory.getLogger(EntityBatches.class);
    static final String SIGNALED = "EntityOperationSignaled";
    static final String CALLED = "EntityOperationCalled";

    private EntityBatches() {}

    /** True for an instance id of the {@code @name@key} form. */
    static boolean isEntityId(String instanceId) {
        return instanceId.length() > 2 && instanceId.charAt(0) == '@' && instanceId.indexOf('@', 1) > 1;
    }

    /**
     * The longest entity instance id a client or an orchestration may address: the managed Durable Task Scheduler's
     * limit (its SDK tests check that a longer one is refused), so code written against either backend behaves alike
     * on both. Orchestration instance ids keep no limit of their own (released behaviour).
     */
    static final int MAX_ENTITY_ID_CHARS = 100;

    /** Null when {@code instanceId} is short enough, else why not. */
    static String tooLong(String instanceId) {
        return instanceId.length() <= MAX_ENTITY_ID_CHARS ? null : "entity instance id '" + instanceId + "' is "
                + instanceId.length() + " characters long; at most " + MAX_ENTITY_ID_CHARS + " are allowed";
    }

    /** The entity name of an {@code @name@key} id. */
    static String name(String instanceId) {
        return instanceId.substring(1, instanceId.indexOf('@', 1));
    }

    /** Checks an id given by a client or an orchestration; the name is lower-cased as the SDKs do. */
    static String requireEntityId(String instanceId) {
        if (!isEntityId(instanceId)) {
            throw new IllegalArgumentException("'" + instanceId + "' is not an entity instance id (@name@key)");
        }
        int at = instanceId.indexOf('@', 1);
        return "@" + instanceId.substring(1, at).toLowerCase(Locale.ROOT) + instanceId.substring(at);
    }

    // ------------------------------------------------------------------ stored state

    /**
     * What an entity keeps in its execution output: its state (null when it has none: never set, or deleted), the
     * orchestration holding its lock and that critical section's id (null when unlocked), and the messages that
     * arrived while another orchestration held the lock, in arrival order (each a {@code QueueMessage} payload).
     */
    record Stored(String state, String lockedBy, String criticalSection, List<String> deferred) {
        static final Stored NONE = new Stored(null, null, null, List.of());

        Stored {
            deferred = List.copyOf(deferred);
        }

        static Stored parse(String output) {
            if (output == null) {
                return NONE;
            }
            try {
                Map<String, Object> m = Json.parseObject(output);
                List<String> deferred = new ArrayList<>();
                if (m.get("deferred") instanceof List<?> l) {
                    l.forEach(x -> deferred.add(String.valueOf(x)));
                }
                return new Stored(m.get("state") instanceof String t ? t : null,
                        m.get("locked_by") instanceof String o ? o : null,
                        m.get("critical_section") instanceof String c ? c : null, deferred);
            } catch (IllegalArgumentException notOurs) {
                return NONE;
            }
        }

        String toJson(String entityName) {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("entity", entityName);
            json.put("state", state);
            if (lockedBy != null) {
                json.put("locked_by", lockedBy);
                json.put("critical_section", criticalSection);
            }
            if (!deferred.isEmpty()) {
                json.put("deferred", deferred);
            }
            return Json.write(json);
        }

        /** Nothing to keep: no state, no lock, nothing waiting (storage cleaning may delete the entity). */
        boolean empty() {
            return state == null && lockedBy == null && deferred.isEmpty();
        }
    }

    // ------------------------------------------------------------------ messages to an entity

    /** The messages that deliver one operation event to an entity: a start (ignored if it exists) and the event. */
    static List<WorkItem> toEntity(String entityId, HistoryEvent operation, Instant now) {
        String name = name(entityId);
        HistoryEvent start = DtEvents.event(DtEvents.NO_ID, now).setExecutionStarted(ExecutionStartedEvent
                .newBuilder().setName(name).setOrchestrationInstance(OrchestrationInstance.newBuilder()
                        .setInstanceId(entityId))).build();
        return List.of(DtMessages.start(entityId, start, 0),
                new WorkItem.QueueMessage(entityId, DtEvents.kind(operation), DtPayload.wrap(operation)));
    }

    static HistoryEvent signal(String requestId, String operation, String input, Instant now) {
        EntityOperationSignaledEvent.Builder s = EntityOperationSignaledEvent.newBuilder().setRequestId(requestId)
                .setOperation(operation);
        if (input != null) {
            s.setInput(DtEvents.string(input));
        }
        return DtEvents.event(DtEvents.NO_ID, now).setEntityOperationSignaled(s).build();
    }

    /** The unlock a critical section's holder sends (or storage cleaning, for a holder that ended). */
    static HistoryEvent unlock(String criticalSection, String holder, Instant now) {
        return DtEvents.event(DtEvents.NO_ID, now).setEntityUnlockSent(EntityUnlockSentEvent.newBuilder()
                .setCriticalSectionId(criticalSection).setParentInstanceId(DtEvents.string(holder))).build();
    }

    // ------------------------------------------------------------------ one batch

    /** One operation of a batch: what the worker runs, and where its result goes (null for a signal). */
    record Operation(OperationRequest request, OrchestrationInstance replyTo, WorkItem message) {}

    /** A prepared batch: the request for the worker (null when no operation is due: the ack needs no worker). */
    static final class Batch {
        final String lockToken;
        final String instance;
        final boolean exists;
        final Stored before;
        final List<Operation> operations = new ArrayList<>();
        /** Lock grants and forwarded lock requests, sent with the ack. */
        final List<WorkItem> lockMessages = new ArrayList<>();
        final List<String> deferred = new ArrayList<>();
        String lockedBy;
        String criticalSection;
        EntityBatchRequest request;

        Batch(String lockToken, String instance, boolean exists, Stored before) {
            this.lockToken = lockToken;
            this.instance = instance;
            this.exists = exists;
            this.before = before;
            this.lockedBy = before.lockedBy();
            this.criticalSection = before.criticalSection();
        }

        Stored after(String state) {
            return new Stored(state, lockedBy, criticalSection, deferred);
        }
    }

    /** {@code stored} is the instance's execution output (null when the instance does not exist yet). */
    static Batch prepare(FetchedOrchestration fetched, boolean exists, String stored, Instant now) {
        String id = fetched.item().instance();
        Batch b = new Batch(fetched.lockToken(), id, exists, Stored.parse(stored));
        // Messages deferred while locked come first: they arrived before anything fetched now.
        ArrayDeque<String> pending = new ArrayDeque<>(b.before.deferred());
        for (WorkItem m : fetched.item().messages()) {
            if (m instanceof WorkItem.StartOrchestration) {
                continue; // only there to let the provider accept the operations of a new entity
            }
            if (m instanceof WorkItem.QueueMessage q) {
                pending.add(q.data());
            } else {
                LOG.warn("entity {}: dropping a {} message (not an entity operation)", id, m.kind());
            }
        }
        List<String> waiting = new ArrayList<>();
        while (!pending.isEmpty()) {
            String payload = pending.poll();
            HistoryEvent e;
            try {
                e = DtPayload.unwrap(payload, HistoryEvent.parser());
            } catch (IllegalArgumentException notAnOperation) {
                LOG.warn("entity {}: dropping a message that is not an entity operation ({})", id,
                        notAnOperation.getMessage());
                continue;
            }
            if (b.lockedBy != null && !b.lockedBy.equals(sender(e))) {
                waiting.add(payload); // locked by another orchestration: runs after its unlock
                continue;
            }
            switch (e.getEventTypeCase()) {
                case ENTITYOPERATIONSIGNALED -> {
                    EntityOperationSignaledEvent s = e.getEntityOperationSignaled();
                    OperationRequest.Builder r = OperationRequest.newBuilder().setOperation(s.getOperation())
                            .setRequestId(s.getRequestId());
                    if (s.hasInput()) {
                        r.setInput(s.getInput());
                    }
                    b.operations.add(new Operation(r.build(), null,
                            new WorkItem.QueueMessage(id, DtEvents.kind(e), payload)));
                }
                case ENTITYOPERATIONCALLED -> {
                    EntityOperationCalledEvent c = e.getEntityOperationCalled();
                    OperationRequest.Builder r = OperationRequest.newBuilder().setOperation(c.getOperation())
                            .setRequestId(c.getRequestId());
                    if (c.hasInput()) {
                        r.setInput(c.getInput());
                    }
                    OrchestrationInstance.Builder to = OrchestrationInstance.newBuilder()
                            .setInstanceId(c.getParentInstanceId().getValue());
                    if (c.hasParentExecutionId()) {
                        to.setExecutionId(c.getParentExecutionId());
                    }
                    b.operations.add(new Operation(r.build(), to.build(),
                            new WorkItem.QueueMessage(id, DtEvents.kind(e), payload)));
                }
                case ENTITYLOCKREQUESTED -> {
                    EntityLockRequestedEvent l = e.getEntityLockRequested();
                    if (b.lockedBy != null) {
                        LOG.warn("entity {}: {} asked again for the lock it holds; ignored", id, b.lockedBy);
                        continue;
                    }
                    b.lockedBy = l.getParentInstanceId().getValue();
                    b.criticalSection = l.getCriticalSectionId();
                    b.lockMessages.addAll(lockTaken(l, now));
                }
                case ENTITYUNLOCKSENT -> {
                    EntityUnlockSentEvent u = e.getEntityUnlockSent();
                    if (b.lockedBy == null || !u.getCriticalSectionId().equals(b.criticalSection)) {
                        LOG.debug("entity {}: ignoring an unlock of critical section {} it does not hold", id,
                                u.getCriticalSectionId());
                        continue;
                    }
                    b.lockedBy = null;
                    b.criticalSection = null;
                    // What waited for the lock runs now, before anything that came after the unlock.
                    for (int i = waiting.size() - 1; i >= 0; i--) {
                        pending.addFirst(waiting.get(i));
                    }
                    waiting.clear();
                }
                default -> LOG.warn("entity {}: dropping a {} message (not an operation this sidecar carries out)",
                        id, e.getEventTypeCase());
            }
        }
        b.deferred.addAll(waiting);
        if (b.operations.isEmpty()) {
            return b;
        }
        EntityBatchRequest.Builder r = EntityBatchRequest.newBuilder().setInstanceId(id);
        if (b.before.state() != null) {
            r.setEntityState(DtEvents.string(b.before.state()));
        }
        b.operations.forEach(o -> r.addOperations(o.request()));
        b.request = r.build();
        return b;
    }

    /** The orchestration a message comes from, or null (a signal: from a client, an entity or an orchestration). */
    private static String sender(HistoryEvent e) {
        return switch (e.getEventTypeCase()) {
            case ENTITYOPERATIONCALLED -> e.getEntityOperationCalled().getParentInstanceId().getValue();
            case ENTITYLOCKREQUESTED -> e.getEntityLockRequested().getParentInstanceId().getValue();
            case ENTITYUNLOCKSENT -> e.getEntityUnlockSent().getParentInstanceId().getValue();
            default -> null;
        };
    }

    /**
     * Having taken its lock, an entity passes the request on to the next entity of the lock set (sorted by the
     * SDK, so two critical sections never wait on each other in a cycle); the last one tells the orchestration.
     */
    private static List<WorkItem> lockTaken(EntityLockRequestedEvent l, Instant now) {
        int next = l.getPosition() + 1;
        if (next < l.getLockSetCount()) {
            HistoryEvent forward = DtEvents.event(DtEvents.NO_ID, now)
                    .setEntityLockRequested(l.toBuilder().setPosition(next)).build();
            return toEntity(requireEntityId(l.getLockSet(next)), forward, now);
        }
        HistoryEvent granted = DtEvents.event(DtEvents.NO_ID, now).setEntityLockGranted(EntityLockGrantedEvent
                .newBuilder().setCriticalSectionId(l.getCriticalSectionId())).build();
        return List.of(DtMessages.toInstance(l.getParentInstanceId().getValue(), 0, granted));
    }

    /** The ack of a batch with no operation for the worker: lock changes and deferred messages only. */
    static Ack withoutWorker(Batch b) {
        if (b.after(b.before.state()).equals(b.before)) {
            return new Ack(b.lockToken, List.of(), ExecutionMetadata.empty());
        }
        return new Ack(b.lockToken, b.lockMessages, metadata(b, b.before.state()));
    }

    private static ExecutionMetadata metadata(Batch b, String state) {
        String name = name(b.instance);
        Stored after = b.after(state);
        ExecutionMetadata md = b.exists ? ExecutionMetadata.empty() : ExecutionMetadata.of(name, "");
        // An entity with nothing to keep is finished for the provider, so CleanEntityStorage may delete it.
        return md.withStatus(after.empty() ? ExecutionMetadata.COMPLETED : ExecutionMetadata.RUNNING,
                after.toJson(name));
    }

    /** What one entity ack commits. */
    record Ack(String lockToken, List<WorkItem> orchestratorItems, ExecutionMetadata metadata) {}

    /**
     * The ack of a batch the worker ran. Operations without a result (a worker may stop a batch early) are sent to
     * the entity again, after the messages that arrived meanwhile.
     */
    static Ack complete(Batch b, EntityBatchResult result, Instant now) {
        List<WorkItem> out = new ArrayList<>(b.lockMessages);
        int done = Math.min(result.getResultsCount(), b.operations.size());
        for (int i = 0; i < done; i++) {
            Operation op = b.operations.get(i);
            if (op.replyTo() == null) {
                continue;
            }
            OperationResult r = result.getResults(i);
            HistoryEvent.Builder reply = DtEvents.event(DtEvents.NO_ID, now);
            if (r.hasFailure()) {
                reply.setEntityOperationFailed(EntityOperationFailedEvent.newBuilder()
                        .setRequestId(op.request().getRequestId())
                        .setFailureDetails(r.getFailure().getFailureDetails()));
            } else {
                EntityOperationCompletedEvent.Builder ok = EntityOperationCompletedEvent.newBuilder()
                        .setRequestId(op.request().getRequestId());
                if (r.getSuccess().hasResult()) {
                    ok.setOutput(r.getSuccess().getResult());
                }
                reply.setEntityOperationCompleted(ok);
            }
            out.add(DtMessages.toInstance(op.replyTo().getInstanceId(), 0, reply.build()));
        }
        for (OperationAction a : result.getActionsList()) {
            switch (a.getOperationActionTypeCase()) {
                case SENDSIGNAL -> {
                    SendSignalAction s = a.getSendSignal();
                    if (!isEntityId(s.getInstanceId())) {
                        // Refusing the batch would only run it again and again: the signal is dropped, loudly.
                        LOG.warn("entity {}: dropping a signal to '{}', which is not an entity instance id "
                                + "(@name@key)", b.instance, s.getInstanceId());
                        continue;
                    }
                    String target = requireEntityId(s.getInstanceId());
                    out.addAll(toEntity(target, signal(UUID.randomUUID().toString(), s.getName(),
                            DtEvents.text(s.hasInput(), s.getInput()), now), now));
                }
                case STARTNEWORCHESTRATION -> {
                    StartNewOrchestrationAction s = a.getStartNewOrchestration();
                    String id = s.getInstanceId().isEmpty() ? TurnApplier.newExecutionId() : s.getInstanceId();
                    ExecutionStartedEvent.Builder started = ExecutionStartedEvent.newBuilder().setName(s.getName())
                            .setOrchestrationInstance(OrchestrationInstance.newBuilder().setInstanceId(id)
                                    .setExecutionId(DtEvents.string(TurnApplier.newExecutionId())));
                    if (s.hasVersion()) {
                        started.setVersion(s.getVersion());
                    }
                    if (s.hasInput()) {
                        started.setInput(s.getInput());
                    }
                    out.add(DtMessages.start(id, DtEvents.event(DtEvents.NO_ID, now).setExecutionStarted(started)
                            .build(), 0));
                }
                default -> LOG.warn("entity {}: ignoring an operation action of unknown kind {}", b.instance,
                        a.getOperationActionTypeCase());
            }
        }
        for (int i = done; i < b.operations.size(); i++) {
            out.add(b.operations.get(i).message());
        }
        String state = result.hasEntityState() ? result.getEntityState().getValue() : null;
        return new Ack(b.lockToken, out, metadata(b, state));
    }

    /** A batch the worker could not run as a whole (it reported a failure for the batch, not an operation). */
    static String describe(TaskFailureDetails f) {
        return f.getErrorType() + ": " + f.getErrorMessage();
    }
}
