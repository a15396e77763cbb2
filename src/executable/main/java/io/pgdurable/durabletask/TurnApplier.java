package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.ContinueAsNewEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateSubOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateTimerAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityLockRequestedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationCalledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationSignaledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityUnlockSentEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EventRaisedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EventSentEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionTerminatedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.ParentInstanceInfo;
import io.pgdurable.durabletask.protocol.OrchestratorService.ScheduleTaskAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEntityMessageAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEventAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SubOrchestrationInstanceCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.SubOrchestrationInstanceCreatedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.SubOrchestrationInstanceFailedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailureDetails;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskScheduledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TimerCreatedEvent;
import io.pgdurable.internal.Json;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.WorkItem;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns one fetched orchestration item into the request a worker runs ({@link #prepare}), and the worker's answer
 * into the arguments of the one atomic ack that commits the turn ({@link #complete}). Pure: it never calls the
 * provider, so every decision here is testable without a database.
 *
 * <p>History layout per provider execution: Durable Task events (type = kind, data = protobuf), plus the provider's
 * own {@code CustomStatusUpdated} events so the provider keeps the instance's custom status. {@code EventSent}
 * events are stored to remember which send actions were already carried out (the 1.5.0 worker cannot replay them
 * and re-reports a send until the sidecar stops asking, so they are never shown to it).
 */
final class TurnApplier {
    private static final Logger LOG = LoggerFactory.getLogger(TurnApplier.class);

    private final Clock clock;

    TurnApplier(Clock clock) {
        this.clock = clock;
    }

    /** A prepared turn: either work for a worker ({@link #request} non-null) or messages to just consume. */
    static final class Turn {
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
    }

    /** Everything one {@code ackOrchestrationItem} call takes, plus whether a client-visible status changed. */
    record Ack(String lockToken, long executionId, List<Event> historyDelta, List<WorkItem> workerItems,
               List<WorkItem> orchestratorItems, ExecutionMetadata metadata,
               List<ScheduledActivityIdentifier> cancelledActivities, boolean statusChanged) {}

    Turn prepare(FetchedOrchestration fetched) {
        OrchestrationItem item = fetched.item();
        Turn t = new Turn(fetched.lockToken(), item.instance(), item.executionId());
        for (Event e : item.history()) {
            t.nextEventId = Math.max(t.nextEventId, e.eventId() + 1);
            if (Events.CUSTOM_STATUS_UPDATED.equals(e.type())) {
                Object status = Json.parseObject(e.data()).get("status");
                t.lastCustomStatus = status instanceof String s ? s : null;
                continue;
            }
            DtEvents.fromEvent(e).ifPresent(h -> replay(t, h));
        }
        t.firstTurn = t.started == null;

        // Starts first: a message sent before a delayed start is fetched ahead of it but belongs after it.
        List<WorkItem> messages = new ArrayList<>(item.messages());
        messages.sort(Comparator.comparingInt(m -> m instanceof WorkItem.StartOrchestration
                || m instanceof WorkItem.ContinueAsNew ? 0 : 1));
        for (WorkItem m : messages) {
            DtMessages.Incoming in;
            try {
                in = DtMessages.decode(m);
            } catch (IllegalArgumentException e) {
                LOG.warn("instance {}: dropping a {} message the sidecar cannot read: {}", t.instance, m.kind(),
                        e.getMessage());
                continue;
            }
            accept(t, m, in);
        }
        if (t.fresh.isEmpty() && !t.replay) {
            return t; // nothing for the worker: the ack only consumes the messages
        }
        if (t.started == null) {
            LOG.warn("instance {}: dropping {} message(s) for an instance that was never started", t.instance,
                    t.fresh.size());
            t.fresh.clear();
            return t;
        }
        List<HistoryEvent> newEvents = new ArrayList<>(t.fresh.size() + 1);
        newEvents.add(DtEvents.orchestratorStarted(turnTime(t)));
        newEvents.addAll(t.fresh);
        t.fresh.clear();
        t.fresh.addAll(newEvents);
        ExecutionStartedEvent s = t.started.getExecutionStarted();
        OrchestratorRequest.Builder rb = OrchestratorRequest.newBuilder().setInstanceId(t.instance)
                .addAllNewEvents(newEvents);
        if (s.getOrchestrationInstance().hasExecutionId()) {
            rb.setExecutionId(s.getOrchestrationInstance().getExecutionId());
        }
        if (!t.newExecution) {
            rb.addAllPastEvents(t.past);
        }
        t.request = rb.build();
        return t;
    }

    /**
     * The worker takes the OrchestratorStarted time as "now" and re-arms a timer that has not strictly passed its
     * due time, so the time is never at or before the due time of a timer fired in this batch. The worker reads it
     * to the millisecond (durabletask-java truncates), so "after" must hold at that resolution: since timers are
     * claimed ahead, a turn often starts within the due time's own millisecond, and a time one microsecond after
     * the due time read as the due time itself.
     */
    static Instant turnTime(Instant now, Iterable<Instant> firedDue) {
        Instant time = now;
        for (Instant due : firedDue) {
            if (!time.truncatedTo(ChronoUnit.MILLIS).isAfter(due)) {
                time = due.truncatedTo(ChronoUnit.MILLIS).plusMillis(1);
            }
        }
        return time;
    }

    private Instant turnTime(Turn t) {
        List<Instant> firedDue = new ArrayList<>();
        for (HistoryEvent e : t.fresh) {
            if (e.hasTimerFired()) {
                Instant due = t.timerDue.get(e.getTimerFired().getTimerId());
                if (due != null) {
                    firedDue.add(due);
                }
            }
        }
        return turnTime(clock.instant(), firedDue);
    }

    /** Folds one stored event into what the turn needs to know about the execution. */
    private static void replay(Turn t, HistoryEvent h) {
        switch (h.getEventTypeCase()) {
            case EXECUTIONSTARTED -> t.started = h;
            case TASKSCHEDULED -> t.openActivities.add(h.getEventId());
            case TASKCOMPLETED -> t.openActivities.remove(h.getTaskCompleted().getTaskScheduledId());
            case TASKFAILED -> t.openActivities.remove(h.getTaskFailed().getTaskScheduledId());
            case SUBORCHESTRATIONINSTANCECREATED ->
                    t.openChildren.put(h.getEventId(), h.getSubOrchestrationInstanceCreated().getInstanceId());
            case SUBORCHESTRATIONINSTANCECOMPLETED ->
                    t.openChildren.remove(h.getSubOrchestrationInstanceCompleted().getTaskScheduledId());
            case SUBORCHESTRATIONINSTANCEFAILED ->
                    t.openChildren.remove(h.getSubOrchestrationInstanceFailed().getTaskScheduledId());
            case TIMERCREATED -> t.timerDue.put(h.getEventId(), DtEvents.instant(h.getTimerCreated().getFireAt()));
            case EXECUTIONSUSPENDED -> t.suspended = true;
            case EXECUTIONRESUMED -> t.suspended = false;
            case EXECUTIONCOMPLETED -> {
                t.terminal = true;
                t.failed = h.getExecutionCompleted().getOrchestrationStatus()
                        == OrchestrationStatus.ORCHESTRATION_STATUS_FAILED;
            }
            case CONTINUEASNEW -> t.terminal = true;
            case ENTITYLOCKREQUESTED, ENTITYUNLOCKSENT -> trackLocks(t, h);
            default -> { }
        }
        if (h.hasEventSent()) {
            t.sentEventIds.add(h.getEventId());
            t.sentEvents.add(h);
            return; // the 1.5.0 worker throws on EventSent during replay
        }
        t.past.add(h);
    }

    private static void trackLocks(Turn t, HistoryEvent h) {
        if (h.hasEntityLockRequested()) {
            t.heldLocks.put(h.getEntityLockRequested().getCriticalSectionId(),
                    new LinkedHashSet<>(h.getEntityLockRequested().getLockSetList()));
        } else if (h.hasEntityUnlockSent()) {
            Set<String> held = t.heldLocks.get(h.getEntityUnlockSent().getCriticalSectionId());
            if (held != null) {
                held.remove(h.getEntityUnlockSent().getTargetInstanceId().getValue());
                if (held.isEmpty()) {
                    t.heldLocks.remove(h.getEntityUnlockSent().getCriticalSectionId());
                }
            }
        }
    }

    private static void accept(Turn t, WorkItem m, DtMessages.Incoming in) {
        HistoryEvent e = in.event();
        if (in.starts()) {
            boolean canRestart = t.started != null && t.terminal && !t.newExecution;
            if (t.started == null && !t.newExecution) {
                t.started = e;
            } else if (canRestart) {
                // After continue-as-new (or a new start of a finished instance) the next execution begins afresh.
                resetForNewExecution(t);
                t.started = e;
            } else {
                LOG.debug("instance {}: ignoring a second start while it runs", t.instance);
                return;
            }
            t.parentExecutionId = in.parentExecutionId();
            t.fresh.add(e);
            t.fresh.addAll(in.carried());
            return;
        }
        if (e.hasExecutionRewound()) {
            // Checked again here (the RPC checked it too): only the failed execution is rewound, once.
            if (t.terminal && t.failed && !t.newExecution && !t.rewinding) {
                t.rewinding = true;
                t.fresh.add(e);
            } else {
                LOG.debug("instance {}: dropping a rewind of an execution that is not failed", t.instance);
            }
            return;
        }
        if (e.hasOrchestratorStarted()) {
            t.replay = !t.terminal; // sent to itself by a rewind: the worker replays the cleaned history
            return;
        }
        if (t.terminal && !t.newExecution) {
            LOG.debug("instance {}: dropping a {} message for a finished execution", t.instance, m.kind());
            return;
        }
        if (in.executionId() != 0 && in.executionId() != t.executionId) {
            LOG.debug("instance {}: dropping a {} message of execution {} (current {})", t.instance, m.kind(),
                    in.executionId(), t.executionId);
            return;
        }
        switch (e.getEventTypeCase()) {
            case EXECUTIONSUSPENDED -> {
                if (t.suspended) {
                    return;
                }
                t.suspended = true;
                t.suspensionChanged = !t.suspensionChanged;
            }
            case EXECUTIONRESUMED -> {
                if (!t.suspended) {
                    return;
                }
                t.suspended = false;
                t.suspensionChanged = !t.suspensionChanged;
            }
            case EXECUTIONTERMINATED -> t.terminateRecursive |= in.recursive();
            default -> { }
        }
        t.fresh.add(e);
    }

    private static void resetForNewExecution(Turn t) {
        t.newExecution = true;
        t.executionId = t.currentExecutionId + 1;
        t.nextEventId = 1;
        t.past.clear();
        t.terminal = false;
        t.suspended = false;
        t.suspensionChanged = false;
        t.sentEventIds.clear();
        t.openActivities.clear();
        t.openChildren.clear();
        t.timerDue.clear();
        t.heldLocks.clear();
        t.lastCustomStatus = null;
        t.firstTurn = true;
    }

    /** The ack of a turn no worker needs to see: consumes its messages, changes nothing else. */
    Ack consumeOnly(Turn t) {
        return new Ack(t.lockToken, t.currentExecutionId, List.of(), List.of(), List.of(),
                ExecutionMetadata.empty(), List.of(), false);
    }

    Ack complete(Turn t, OrchestratorResponse response) {
        if (t.rewinding) {
            return rewound(t, response);
        }
        Instant now = clock.instant();
        List<Event> delta = new ArrayList<>();
        List<WorkItem> workerItems = new ArrayList<>();
        List<WorkItem> orchestratorItems = new ArrayList<>();
        List<ScheduledActivityIdentifier> cancelled = new ArrayList<>();
        long[] nextId = {t.nextEventId};
        for (HistoryEvent e : t.fresh) {
            delta.add(DtEvents.toEvent(nextId[0]++, e));
        }
        ExecutionStartedEvent started = t.started.getExecutionStarted();
        String dtExecutionId = started.getOrchestrationInstance().getExecutionId().getValue();
        OrchestrationInstance self = OrchestrationInstance.newBuilder().setInstanceId(t.instance)
                .setExecutionId(DtEvents.string(dtExecutionId)).build();
        DtState finalState = null;

        for (OrchestratorAction a : carriedOut(t, response, now)) {
            int id = a.getId();
            switch (a.getOrchestratorActionTypeCase()) {
                case SCHEDULETASK -> {
                    ScheduleTaskAction st = a.getScheduleTask();
                    TaskScheduledEvent.Builder ev = TaskScheduledEvent.newBuilder().setName(st.getName());
                    ActivityRequest.Builder req = ActivityRequest.newBuilder().setName(st.getName())
                            .setOrchestrationInstance(self).setTaskId(id);
                    if (st.hasVersion()) {
                        ev.setVersion(st.getVersion());
                        req.setVersion(st.getVersion());
                    }
                    if (st.hasInput()) {
                        ev.setInput(st.getInput());
                        req.setInput(st.getInput());
                    }
                    ev.putAllTags(st.getTagsMap());
                    req.putAllTags(st.getTagsMap());
                    delta.add(DtEvents.toEvent(nextId[0]++, DtEvents.event(id, now).setTaskScheduled(ev).build()));
                    workerItems.add(new WorkItem.ActivityExecute(t.instance, t.executionId, id, st.getName(),
                            DtPayload.wrap(req.build())));
                    t.openActivities.add(id);
                }
                case CREATETIMER -> {
                    CreateTimerAction ct = a.getCreateTimer();
                    delta.add(DtEvents.toEvent(nextId[0]++, DtEvents.event(id, now)
                            .setTimerCreated(TimerCreatedEvent.newBuilder().setFireAt(ct.getFireAt())).build()));
                    orchestratorItems.add(new WorkItem.TimerFired(t.instance, t.executionId, id,
                            Math.max(1, DtEvents.ceilMillis(ct.getFireAt()))));
                }
                case CREATESUBORCHESTRATION -> {
                    CreateSubOrchestrationAction cs = a.getCreateSubOrchestration();
                    SubOrchestrationInstanceCreatedEvent.Builder ev = SubOrchestrationInstanceCreatedEvent
                            .newBuilder().setInstanceId(cs.getInstanceId()).setName(cs.getName());
                    ExecutionStartedEvent.Builder child = ExecutionStartedEvent.newBuilder().setName(cs.getName())
                            .setOrchestrationInstance(OrchestrationInstance.newBuilder()
                                    .setInstanceId(cs.getInstanceId())
                                    .setExecutionId(DtEvents.string(newExecutionId())))
                            .setParentInstance(parentInfo(id, started, self));
                    if (cs.hasVersion()) {
                        ev.setVersion(cs.getVersion());
                        child.setVersion(cs.getVersion());
                    }
                    if (cs.hasInput()) {
                        ev.setInput(cs.getInput());
                        child.setInput(cs.getInput());
                    }
                    ev.putAllTags(cs.getTagsMap());
                    child.putAllTags(cs.getTagsMap());
                    delta.add(DtEvents.toEvent(nextId[0]++, DtEvents.event(id, now)
                            .setSubOrchestrationInstanceCreated(ev).build()));
                    orchestratorItems.add(DtMessages.start(cs.getInstanceId(),
                            DtEvents.event(DtEvents.NO_ID, now).setExecutionStarted(child).build(), t.executionId));
                    t.openChildren.put(id, cs.getInstanceId());
                }
                case SENDEVENT -> {
                    if (!t.sentEventIds.add(id)) {
                        continue; // carried out in an earlier turn; the worker reports it again
                    }
                    SendEventAction se = a.getSendEvent();
                    String target = se.getInstance().getInstanceId();
                    EventSentEvent.Builder sent = EventSentEvent.newBuilder().setInstanceId(target)
                            .setName(se.getName());
                    EventRaisedEvent.Builder raised = EventRaisedEvent.newBuilder().setName(se.getName());
                    if (se.hasData()) {
                        sent.setInput(se.getData());
                        raised.setInput(se.getData());
                    }
                    delta.add(DtEvents.toEvent(nextId[0]++, DtEvents.event(id, now).setEventSent(sent).build()));
                    orchestratorItems.add(DtMessages.toInstance(target, 0,
                            DtEvents.event(DtEvents.NO_ID, now).setEventRaised(raised).build()));
                }
                case SENDENTITYMESSAGE -> {
                    // carriedOut() lets through messages to entity ids only. Replies come back to this instance
                    // whatever the worker named as parent.
                    SendEntityMessageAction m = a.getSendEntityMessage();
                    HistoryEvent.Builder sent = DtEvents.event(id, now);
                    HistoryEvent.Builder message = DtEvents.event(DtEvents.NO_ID, now);
                    String target;
                    switch (m.getEntityMessageTypeCase()) {
                        case ENTITYOPERATIONSIGNALED -> {
                            EntityOperationSignaledEvent s = m.getEntityOperationSignaled();
                            target = s.getTargetInstanceId().getValue();
                            sent.setEntityOperationSignaled(s);
                            message.setEntityOperationSignaled(s.toBuilder().clearTargetInstanceId());
                        }
                        case ENTITYOPERATIONCALLED -> {
                            EntityOperationCalledEvent c = m.getEntityOperationCalled();
                            target = c.getTargetInstanceId().getValue();
                            sent.setEntityOperationCalled(c.toBuilder().clearParentInstanceId()
                                    .clearParentExecutionId());
                            message.setEntityOperationCalled(c.toBuilder().clearTargetInstanceId()
                                    .setParentInstanceId(DtEvents.string(t.instance))
                                    .setParentExecutionId(DtEvents.string(dtExecutionId)));
                        }
                        case ENTITYLOCKREQUESTED -> {
                            EntityLockRequestedEvent l = m.getEntityLockRequested();
                            target = l.getLockSet(0);
                            sent.setEntityLockRequested(l.toBuilder().clearParentInstanceId());
                            message.setEntityLockRequested(l.toBuilder().setPosition(0)
                                    .setParentInstanceId(DtEvents.string(t.instance)));
                        }
                        default -> {
                            EntityUnlockSentEvent u = m.getEntityUnlockSent();
                            target = u.getTargetInstanceId().getValue();
                            sent.setEntityUnlockSent(u.toBuilder().clearParentInstanceId());
                            message.setEntityUnlockSent(u.toBuilder().clearTargetInstanceId()
                                    .setParentInstanceId(DtEvents.string(t.instance)));
                        }
                    }
                    HistoryEvent recorded = sent.build();
                    trackLocks(t, recorded);
                    delta.add(DtEvents.toEvent(nextId[0]++, recorded));
                    orchestratorItems.addAll(EntityBatches.toEntity(EntityBatches.requireEntityId(target),
                            message.build(), now));
                }
                case COMPLETEORCHESTRATION -> {
                    if (finalState != null) {
                        continue; // one completion per execution
                    }
                    finalState = completeExecution(t, a.getCompleteOrchestration(), id, now, started, self, delta,
                            orchestratorItems, nextId);
                    for (int open : t.openActivities) {
                        cancelled.add(new ScheduledActivityIdentifier(t.instance, t.executionId, open));
                    }
                }
                default -> throw new IllegalStateException("unreachable: " + a.getOrchestratorActionTypeCase()
                        + " passed carriedOut()");
            }
        }

        String custom = response.hasCustomStatus() && !response.getCustomStatus().getValue().isEmpty()
                ? response.getCustomStatus().getValue() : null;
        if (!Objects.equals(custom, t.lastCustomStatus) || (t.firstTurn && t.executionId > 1)) {
            delta.add(Events.customStatusUpdated(nextId[0]++, custom));
        }

        ExecutionMetadata md = t.firstTurn ? executionMetadata(started) : ExecutionMetadata.empty();
        DtState state = finalState;
        if (state == null && (t.firstTurn || t.suspensionChanged)) {
            state = running(t, started)
                    .withStatus(t.suspended ? OrchestrationStatus.ORCHESTRATION_STATUS_SUSPENDED
                            : OrchestrationStatus.ORCHESTRATION_STATUS_RUNNING);
        }
        if (state != null) {
            md = md.withStatus(DtState.providerStatus(state.status()), state.toJson());
        }
        return new Ack(t.lockToken, t.executionId, delta, workerItems, orchestratorItems, md, cancelled,
                state != null);
    }

    /**
     * The answer to a rewind turn. The worker rewrites the failed execution's history (failed activity results and
     * their scheduling taken out, the completion removed, a new Durable Task execution id) and returns it as its one
     * action; the sidecar stores it as the instance's next execution, running, and sends the instance a message to
     * itself so the worker replays it and schedules again what failed. A worker that does not know rewind (Durable
     * Task for Java 1.5.0) answers without that action: then nothing changes and the instance stays failed.
     */
    private Ack rewound(Turn t, OrchestratorResponse response) {
        RewindOrchestrationAction rewind = null;
        for (OrchestratorAction a : response.getActionsList()) {
            if (a.hasRewindOrchestration()) {
                rewind = a.getRewindOrchestration();
            }
        }
        if (rewind == null || rewind.getNewHistoryCount() == 0) {
            LOG.warn("instance {}: the worker did not rewind the failed execution (a worker that does not know "
                    + "rewind); it stays failed", t.instance);
            return consumeOnly(t);
        }
        Instant now = clock.instant();
        List<Event> delta = new ArrayList<>();
        long nextId = 1;
        HistoryEvent started = null;
        for (HistoryEvent h : rewind.getNewHistoryList()) {
            if (h.hasExecutionStarted() && started == null) {
                started = h;
            }
            delta.add(DtEvents.toEvent(nextId++, h));
        }
        if (started == null) {
            LOG.warn("instance {}: the worker's rewound history has no ExecutionStarted event; it stays failed",
                    t.instance);
            return consumeOnly(t);
        }
        for (HistoryEvent sent : t.sentEvents) {
            delta.add(DtEvents.toEvent(nextId++, sent));
        }
        if (t.lastCustomStatus != null) {
            delta.add(Events.customStatusUpdated(nextId++, t.lastCustomStatus));
        }
        ExecutionStartedEvent s = started.getExecutionStarted();
        DtState running = running(t, s);
        ExecutionMetadata md = executionMetadata(s)
                .withStatus(DtState.providerStatus(running.status()), running.toJson());
        WorkItem replay = DtMessages.toInstance(t.instance, 0, DtEvents.orchestratorStarted(now));
        return new Ack(t.lockToken, t.currentExecutionId + 1, delta, List.of(), List.of(replay), md, List.of(),
                true);
    }

    /**
     * The actions to carry out: the worker's, unless one of them is of a kind this sidecar cannot carry out
     * (an entity message it cannot deliver, terminating another instance, a rewind outside a rewind turn, or a kind
     * newer than this sidecar's protocol).
     * Then none of them is carried out and the execution fails instead, naming the action, so the instance never
     * waits for something that will not happen.
     */
    private static List<OrchestratorAction> carriedOut(Turn t, OrchestratorResponse response, Instant now) {
        if (response.getIsPartial() || response.hasChunkIndex()) {
            return List.of(failing(t, response.getActionsCount() > 0 ? response.getActions(0).getId() : 0,
                    "a chunked orchestrator response (isPartial/chunkIndex) is not supported by the pgdurable "
                            + "sidecar"));
        }
        for (OrchestratorAction a : response.getActionsList()) {
            String unsupported = switch (a.getOrchestratorActionTypeCase()) {
                case SCHEDULETASK, CREATETIMER, CREATESUBORCHESTRATION, SENDEVENT, COMPLETEORCHESTRATION -> null;
                case SENDENTITYMESSAGE -> unsupportedEntityMessage(a.getSendEntityMessage(), now);
                case TERMINATEORCHESTRATION -> "terminateOrchestration (terminating another instance from an "
                        + "orchestration is not supported by the pgdurable sidecar)";
                case REWINDORCHESTRATION -> "rewindOrchestration (only the answer to a RewindInstance request)";
                case ORCHESTRATORACTIONTYPE_NOT_SET -> a.getUnknownFields().asMap().isEmpty()
                        ? "an action with no kind"
                        : "an action of a kind this sidecar's protocol version does not know (field "
                        + a.getUnknownFields().asMap().keySet() + ")";
            };
            if (unsupported != null) {
                return List.of(failing(t, a.getId(), "orchestration action #" + a.getId() + " is unsupported: "
                        + unsupported));
            }
        }
        return response.getActionsList();
    }

    /** What a new execution records about itself: name, version and parent. */
    private static ExecutionMetadata executionMetadata(ExecutionStartedEvent started) {
        String parent = started.hasParentInstance()
                ? started.getParentInstance().getOrchestrationInstance().getInstanceId() : null;
        return ExecutionMetadata.of(started.getName(), started.hasVersion() ? started.getVersion().getValue() : "")
                .withParentInstanceId(parent);
    }

    /** The client-visible state of the turn's execution while it runs. */
    private static DtState running(Turn t, ExecutionStartedEvent started) {
        return DtState.running(DtEvents.text(started.hasInput(), started.getInput()), started.getTagsMap(),
                createdMs(t));
    }

    /**
     * When the execution was created: its ExecutionStarted event's time, or its scheduled start time when that is
     * later (an instance scheduled for later is not found before then, and its created time says so); 0 if the
     * event carries neither.
     */
    private static long createdMs(Turn t) {
        long created = t.started.hasTimestamp() ? DtEvents.instant(t.started.getTimestamp()).toEpochMilli() : 0;
        ExecutionStartedEvent s = t.started.getExecutionStarted();
        if (s.hasScheduledStartTimestamp()) {
            created = Math.max(created, DtEvents.instant(s.getScheduledStartTimestamp()).toEpochMilli());
        }
        return created;
    }

    /** Null for an entity message this sidecar carries out: one due now, to entity ids only. */
    private static String unsupportedEntityMessage(SendEntityMessageAction m, Instant now) {
        com.google.protobuf.Timestamp when = null;
        List<String> targets;
        switch (m.getEntityMessageTypeCase()) {
            case ENTITYOPERATIONSIGNALED -> {
                if (m.getEntityOperationSignaled().hasScheduledTime()) {
                    when = m.getEntityOperationSignaled().getScheduledTime();
                }
                targets = List.of(m.getEntityOperationSignaled().getTargetInstanceId().getValue());
            }
            case ENTITYOPERATIONCALLED -> {
                if (m.getEntityOperationCalled().hasScheduledTime()) {
                    when = m.getEntityOperationCalled().getScheduledTime();
                }
                targets = List.of(m.getEntityOperationCalled().getTargetInstanceId().getValue());
            }
            case ENTITYLOCKREQUESTED -> {
                targets = m.getEntityLockRequested().getLockSetList();
                if (targets.isEmpty()) {
                    return "sendEntityMessage entityLockRequested with an empty lock set";
                }
            }
            case ENTITYUNLOCKSENT -> targets = List.of(m.getEntityUnlockSent().getTargetInstanceId().getValue());
            default -> {
                return "sendEntityMessage of no known kind";
            }
        }
        for (String target : targets) {
            if (!EntityBatches.isEntityId(target)) {
                return "sendEntityMessage to '" + target + "', which is not an entity instance id (@name@key)";
            }
            String tooLong = EntityBatches.tooLong(target);
            if (tooLong != null) {
                return "sendEntityMessage: " + tooLong;
            }
        }
        if (when != null && DtEvents.instant(when).isAfter(now.plusSeconds(1))) {
            return "sendEntityMessage with a scheduled time (scheduled entity operations from orchestrations are "
                    + "not supported by the pgdurable sidecar)";
        }
        return null;
    }

    private static OrchestratorAction failing(Turn t, int id, String message) {
        LOG.warn("instance {}: failing the orchestration: {}", t.instance, message);
        TaskFailureDetails why = TaskFailureDetails.newBuilder().setErrorType("UnsupportedAction")
                .setErrorMessage(message).setIsNonRetriable(true).build();
        return OrchestratorAction.newBuilder().setId(id)
                .setCompleteOrchestration(CompleteOrchestrationAction.newBuilder()
                        .setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_FAILED)
                        .setFailureDetails(why))
                .build();
    }

    private DtState completeExecution(Turn t, CompleteOrchestrationAction c, int id, Instant now,
                                      ExecutionStartedEvent started, OrchestrationInstance self, List<Event> delta,
                                      List<WorkItem> orchestratorItems, long[] nextId) {
        OrchestrationStatus status = c.getOrchestrationStatus();
        String result = DtEvents.text(c.hasResult(), c.getResult());
        // An execution that ends inside a critical section (failed, terminated, or simply never released) lets go
        // of its locks, so the entities do not wait for an unlock that can no longer come.
        t.heldLocks.forEach((section, entities) -> entities.forEach(entity -> orchestratorItems.addAll(
                EntityBatches.toEntity(EntityBatches.requireEntityId(entity),
                        EntityBatches.unlock(section, t.instance, now), now))));
        t.heldLocks.clear();
        DtState state = running(t, started);
        if (status == OrchestrationStatus.ORCHESTRATION_STATUS_CONTINUED_AS_NEW) {
            ContinueAsNewEvent.Builder can = ContinueAsNewEvent.newBuilder();
            if (c.hasResult()) {
                can.setInput(c.getResult());
            }
            delta.add(DtEvents.toEvent(nextId[0]++, DtEvents.event(id, now).setContinueAsNew(can).build()));
            ExecutionStartedEvent.Builder next = started.toBuilder().clearInput().clearScheduledStartTimestamp()
                    .setOrchestrationInstance(OrchestrationInstance.newBuilder().setInstanceId(t.instance)
                            .setExecutionId(DtEvents.string(newExecutionId())));
            if (c.hasResult()) {
                next.setInput(c.getResult());
            }
            if (c.hasNewVersion()) {
                next.setVersion(c.getNewVersion());
            }
            orchestratorItems.add(DtMessages.continueAsNew(t.instance,
                    DtEvents.event(DtEvents.NO_ID, now).setExecutionStarted(next).build(), t.parentExecutionId,
                    c.getCarryoverEventsList()));
            return state.finished(status, result, null);
        }
        ExecutionCompletedEvent.Builder done = ExecutionCompletedEvent.newBuilder().setOrchestrationStatus(status);
        if (c.hasResult()) {
            done.setResult(c.getResult());
        }
        TaskFailureDetails failure = c.hasFailureDetails() ? c.getFailureDetails() : null;
        if (failure == null && status == OrchestrationStatus.ORCHESTRATION_STATUS_FAILED && c.hasDetails()) {
            failure = TaskFailureDetails.newBuilder().setErrorType("OrchestrationFailed")
                    .setErrorMessage(c.getDetails().getValue()).build();
        }
        if (failure != null) {
            done.setFailureDetails(failure);
        }
        delta.add(DtEvents.toEvent(nextId[0]++, DtEvents.event(id, now).setExecutionCompleted(done).build()));

        if (started.hasParentInstance()) {
            ParentInstanceInfo p = started.getParentInstance();
            String parent = p.getOrchestrationInstance().getInstanceId();
            HistoryEvent toParent;
            if (status == OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED) {
                SubOrchestrationInstanceCompletedEvent.Builder ok = SubOrchestrationInstanceCompletedEvent
                        .newBuilder().setTaskScheduledId(p.getTaskScheduledId());
                if (c.hasResult()) {
                    ok.setResult(c.getResult());
                }
                toParent = DtEvents.event(DtEvents.NO_ID, now).setSubOrchestrationInstanceCompleted(ok).build();
            } else {
                TaskFailureDetails why = failure != null ? failure : TaskFailureDetails.newBuilder()
                        .setErrorType("Orchestration" + capitalized(DtState.shortName(status)))
                        .setErrorMessage("sub-orchestration " + t.instance + " ended with status "
                                + DtState.shortName(status) + (result != null ? ": " + result : ""))
                        .build();
                toParent = DtEvents.event(DtEvents.NO_ID, now).setSubOrchestrationInstanceFailed(
                        SubOrchestrationInstanceFailedEvent.newBuilder()
                                .setTaskScheduledId(p.getTaskScheduledId()).setFailureDetails(why)).build();
            }
            orchestratorItems.add(DtMessages.toInstance(parent, t.parentExecutionId, toParent));
        }
        if (status == OrchestrationStatus.ORCHESTRATION_STATUS_TERMINATED && t.terminateRecursive) {
            for (String child : t.openChildren.values()) {
                ExecutionTerminatedEvent.Builder term = ExecutionTerminatedEvent.newBuilder();
                if (c.hasResult()) {
                    term.setInput(c.getResult());
                }
                orchestratorItems.add(DtMessages.terminate(child,
                        DtEvents.event(DtEvents.NO_ID, now).setExecutionTerminated(term).build(), true));
            }
        }
        return state.finished(status, result, failure);
    }

    private static ParentInstanceInfo parentInfo(int taskId, ExecutionStartedEvent started,
                                                 OrchestrationInstance self) {
        ParentInstanceInfo.Builder p = ParentInstanceInfo.newBuilder().setTaskScheduledId(taskId)
                .setName(DtEvents.string(started.getName())).setOrchestrationInstance(self);
        if (started.hasVersion()) {
            p.setVersion(started.getVersion());
        }
        return p.build();
    }

    private static String capitalized(String upper) {
        return upper.charAt(0) + upper.substring(1).toLowerCase(java.util.Locale.ROOT);
    }

    static String newExecutionId() {
        return UUID.randomUUID().toString().replace("-", "");
    }
}
