package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorRequest;
import io.pgdurable.spi.WorkItem;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One orchestration turn: what the sidecar knows about the execution, folded from its stored history
 * ({@link #replay}), and the new events the turn's messages bring ({@link #accept}). Either it carries work for a
 * worker ({@link #request} non-null) or its messages are just consumed.
 */
final class Turn {
    private static final Logger LOG = LoggerFactory.getLogger(Turn.class);

    final String lockToken;
    final String instance;
    final long currentExecutionId;
    long executionId;
    boolean newExecution;
    boolean firstTurn;
    long nextEventId = 1;
    final List<HistoryEvent> past = new ArrayList<>();
    final List<HistoryEvent> fresh = new ArrayList<>();
    HistoryEvent started;
    long parentExecutionId;
    boolean terminal;
    /** The execution ended FAILED: the only state a rewind applies to. */
    boolean failed;
    /** This turn asks the worker to rewind the failed execution (it answers with the cleaned history). */
    boolean rewinding;
    /** A turn with no new event but the OrchestratorStarted: the worker replays the history (after a rewind). */
    boolean replay;
    /** The EventSent records (never shown to the worker), kept across a rewind like everything it replays. */
    final List<HistoryEvent> sentEvents = new ArrayList<>();
    boolean suspended;
    boolean suspensionChanged;
    boolean terminateRecursive;
    String lastCustomStatus;
    final Set<Integer> sentEventIds = new LinkedHashSet<>();
    final Set<Integer> openActivities = new LinkedHashSet<>();
    final Map<Integer, String> openChildren = new LinkedHashMap<>();
    final Map<Integer, Instant> timerDue = new LinkedHashMap<>();
    /** Critical section id → the entities asked for its lock and not yet sent an unlock. */
    final Map<String, Set<String>> heldLocks = new LinkedHashMap<>();
    OrchestratorRequest request;

    Turn(String lockToken, String instance, long currentExecutionId) {
        this.lockToken = lockToken;
        this.instance = instance;
        this.currentExecutionId = currentExecutionId;
        this.executionId = currentExecutionId;
    }

    boolean needsWorker() {
        return request != null;
    }

    /** The ExecutionStarted event of the execution this turn runs. */
    ExecutionStartedEvent startedEvent() {
        return started.getExecutionStarted();
    }

    /** This execution as the worker names it: the instance id and the Durable Task execution id. */
    OrchestrationInstance self() {
        return OrchestrationInstance.newBuilder().setInstanceId(instance)
                .setExecutionId(DtEvents.string(startedEvent().getOrchestrationInstance().getExecutionId()
                        .getValue()))
                .build();
    }

    /** The client-visible state, while it runs, of an execution of this instance started by {@code startedEvent}. */
    DtState running(ExecutionStartedEvent startedEvent) {
        return DtState.running(DtEvents.text(startedEvent.hasInput(), startedEvent.getInput()),
                startedEvent.getTagsMap(), createdMs());
    }

    /**
     * When the execution was created: its ExecutionStarted event's time, or its scheduled start time when that is
     * later (an instance scheduled for later is not found before then, and its created time says so); 0 if the
     * event carries neither.
     */
    private long createdMs() {
        long created = started.hasTimestamp() ? DtEvents.instant(started.getTimestamp()).toEpochMilli() : 0;
        ExecutionStartedEvent s = started.getExecutionStarted();
        if (s.hasScheduledStartTimestamp()) {
            created = Math.max(created, DtEvents.instant(s.getScheduledStartTimestamp()).toEpochMilli());
        }
        return created;
    }

    /** Folds one stored event into what the turn needs to know about the execution. */
    void replay(HistoryEvent h) {
        switch (h.getEventTypeCase()) {
            case EXECUTIONSTARTED -> started = h;
            case TASKSCHEDULED -> openActivities.add(h.getEventId());
            case TASKCOMPLETED -> openActivities.remove(h.getTaskCompleted().getTaskScheduledId());
            case TASKFAILED -> openActivities.remove(h.getTaskFailed().getTaskScheduledId());
            case SUBORCHESTRATIONINSTANCECREATED ->
                    openChildren.put(h.getEventId(), h.getSubOrchestrationInstanceCreated().getInstanceId());
            case SUBORCHESTRATIONINSTANCECOMPLETED ->
                    openChildren.remove(h.getSubOrchestrationInstanceCompleted().getTaskScheduledId());
            case SUBORCHESTRATIONINSTANCEFAILED ->
                    openChildren.remove(h.getSubOrchestrationInstanceFailed().getTaskScheduledId());
            case TIMERCREATED -> timerDue.put(h.getEventId(), DtEvents.instant(h.getTimerCreated().getFireAt()));
            case EXECUTIONSUSPENDED -> suspended = true;
            case EXECUTIONRESUMED -> suspended = false;
            case EXECUTIONCOMPLETED -> {
                terminal = true;
                failed = h.getExecutionCompleted().getOrchestrationStatus()
                        == OrchestrationStatus.ORCHESTRATION_STATUS_FAILED;
            }
            case CONTINUEASNEW -> terminal = true;
            case ENTITYLOCKREQUESTED, ENTITYUNLOCKSENT -> trackLocks(h);
            default -> { }
        }
        if (h.hasEventSent()) {
            sentEventIds.add(h.getEventId());
            sentEvents.add(h);
            return; // the 1.5.0 worker throws on EventSent during replay
        }
        past.add(h);
    }

    /** Keeps {@link #heldLocks} up to date with a lock request or an unlock this execution sent. */
    void trackLocks(HistoryEvent h) {
        if (h.hasEntityLockRequested()) {
            heldLocks.put(h.getEntityLockRequested().getCriticalSectionId(),
                    new LinkedHashSet<>(h.getEntityLockRequested().getLockSetList()));
        } else if (h.hasEntityUnlockSent()) {
            Set<String> held = heldLocks.get(h.getEntityUnlockSent().getCriticalSectionId());
            if (held != null) {
                held.remove(h.getEntityUnlockSent().getTargetInstanceId().getValue());
                if (held.isEmpty()) {
                    heldLocks.remove(h.getEntityUnlockSent().getCriticalSectionId());
                }
            }
        }
    }

    /** Takes one message of the turn: a new event for the worker, or nothing when it no longer applies. */
    void accept(WorkItem m, DtMessages.Incoming in) {
        HistoryEvent e = in.event();
        if (in.starts()) {
            boolean canRestart = started != null && terminal && !newExecution;
            if (started == null && !newExecution) {
                started = e;
            } else if (canRestart) {
                // After continue-as-new (or a new start of a finished instance) the next execution begins afresh.
                resetForNewExecution();
                started = e;
            } else {
                LOG.debug("instance {}: ignoring a second start while it runs", instance);
                return;
            }
            parentExecutionId = in.parentExecutionId();
            fresh.add(e);
            fresh.addAll(in.carried());
            return;
        }
        if (e.hasExecutionRewound()) {
            // Checked again here (the RPC checked it too): only the failed execution is rewound, once.
            if (terminal && failed && !newExecution && !rewinding) {
                rewinding = true;
                fresh.add(e);
            } else {
                LOG.debug("instance {}: dropping a rewind of an execution that is not failed", instance);
            }
            return;
        }
        if (e.hasOrchestratorStarted()) {
            replay = !terminal; // sent to itself by a rewind: the worker replays the cleaned history
            return;
        }
        if (terminal && !newExecution) {
            LOG.debug("instance {}: dropping a {} message for a finished execution", instance, m.kind());
            return;
        }
        if (in.executionId() != 0 && in.executionId() != executionId) {
            LOG.debug("instance {}: dropping a {} message of execution {} (current {})", instance, m.kind(),
                    in.executionId(), executionId);
            return;
        }
        switch (e.getEventTypeCase()) {
            case EXECUTIONSUSPENDED -> {
                if (suspended) {
                    return;
                }
                suspended = true;
                suspensionChanged = !suspensionChanged;
            }
            case EXECUTIONRESUMED -> {
                if (!suspended) {
                    return;
                }
                suspended = false;
                suspensionChanged = !suspensionChanged;
            }
            case EXECUTIONTERMINATED -> terminateRecursive |= in.recursive();
            default -> { }
        }
        fresh.add(e);
    }

    private void resetForNewExecution() {
        newExecution = true;
        executionId = currentExecutionId + 1;
        nextEventId = 1;
        past.clear();
        terminal = false;
        suspended = false;
        suspensionChanged = false;
        sentEventIds.clear();
        openActivities.clear();
        openChildren.clear();
        timerDue.clear();
        heldLocks.clear();
        lastCustomStatus = null;
        firstTurn = true;
    }
}
