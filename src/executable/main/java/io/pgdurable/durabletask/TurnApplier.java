package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateSubOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateTimerAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.EventRaisedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EventSentEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.ParentInstanceInfo;
import io.pgdurable.durabletask.protocol.OrchestratorService.ScheduleTaskAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEventAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SubOrchestrationInstanceCreatedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailureDetails;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskScheduledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TimerCreatedEvent;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.WorkItem;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns one fetched orchestration item into the request a worker runs ({@link #prepare}), and the worker's answer
 * into the arguments of the one atomic ack that commits the turn ({@link #complete}), one method per kind of action.
 * Pure: it never calls the provider, so every decision here is testable without a database.
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
            DtEvents.fromEvent(e).ifPresent(t::replay);
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
            t.accept(m, in);
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
        newEvents.add(DtEvents.orchestratorStarted(TurnTime.of(t, clock.instant())));
        newEvents.addAll(t.fresh);
        t.fresh.clear();
        t.fresh.addAll(newEvents);
        ExecutionStartedEvent s = t.startedEvent();
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

    /** The ack of a turn no worker needs to see: consumes its messages, changes nothing else. */
    static Ack consumeOnly(Turn t) {
        return new Ack(t.lockToken, t.currentExecutionId, List.of(), List.of(), List.of(),
                ExecutionMetadata.empty(), List.of(), false);
    }

    Ack complete(Turn t, OrchestratorResponse response) {
        if (t.rewinding) {
            return Rewind.apply(t, response, clock.instant());
        }
        AckBuilder out = new AckBuilder(t.nextEventId, clock.instant());
        t.fresh.forEach(out::record);
        DtState finalState = null;
        for (OrchestratorAction a : carriedOut(t, response, out)) {
            int id = a.getId();
            switch (a.getOrchestratorActionTypeCase()) {
                case SCHEDULETASK -> scheduleTask(t, id, a.getScheduleTask(), out);
                case CREATETIMER -> createTimer(t, id, a.getCreateTimer(), out);
                case CREATESUBORCHESTRATION -> createSubOrchestration(t, id, a.getCreateSubOrchestration(), out);
                case SENDEVENT -> sendEvent(t, id, a.getSendEvent(), out);
                case SENDENTITYMESSAGE -> EntityMessages.send(t, id, a.getSendEntityMessage(), out);
                case COMPLETEORCHESTRATION -> {
                    if (finalState == null) { // one completion per execution
                        finalState = completeOrchestration(t, id, a.getCompleteOrchestration(), out);
                    }
                }
                default -> throw new IllegalStateException("unreachable: " + a.getOrchestratorActionTypeCase()
                        + " passed carriedOut()");
            }
        }
        recordCustomStatus(t, response, out);
        return finish(t, finalState, out);
    }

    /** Records the TaskScheduled event and queues the activity for the workers. */
    private static void scheduleTask(Turn t, int id, ScheduleTaskAction st, AckBuilder out) {
        TaskScheduledEvent.Builder ev = TaskScheduledEvent.newBuilder().setName(st.getName());
        ActivityRequest.Builder req = ActivityRequest.newBuilder().setName(st.getName())
                .setOrchestrationInstance(t.self()).setTaskId(id);
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
        out.record(DtEvents.event(id, out.now()).setTaskScheduled(ev).build());
        out.toWorkers(new WorkItem.ActivityExecute(t.instance, t.executionId, id, st.getName(),
                DtPayload.wrap(req.build())));
        t.openActivities.add(id);
    }

    /**
     * Records the TimerCreated event and sends the instance its TimerFired, visible from the due time rounded up to
     * the millisecond ({@link DtEvents#ceilMillis}).
     */
    private static void createTimer(Turn t, int id, CreateTimerAction ct, AckBuilder out) {
        out.record(DtEvents.event(id, out.now())
                .setTimerCreated(TimerCreatedEvent.newBuilder().setFireAt(ct.getFireAt())).build());
        out.toOrchestrators(new WorkItem.TimerFired(t.instance, t.executionId, id,
                Math.max(1, DtEvents.ceilMillis(ct.getFireAt()))));
    }

    /** Records the SubOrchestrationInstanceCreated event and starts the child, with this execution as parent. */
    private static void createSubOrchestration(Turn t, int id, CreateSubOrchestrationAction cs, AckBuilder out) {
        SubOrchestrationInstanceCreatedEvent.Builder ev = SubOrchestrationInstanceCreatedEvent.newBuilder()
                .setInstanceId(cs.getInstanceId()).setName(cs.getName());
        ExecutionStartedEvent.Builder child = ExecutionStartedEvent.newBuilder().setName(cs.getName())
                .setOrchestrationInstance(OrchestrationInstance.newBuilder().setInstanceId(cs.getInstanceId())
                        .setExecutionId(DtEvents.string(newExecutionId())))
                .setParentInstance(parentInfo(t, id));
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
        out.record(DtEvents.event(id, out.now()).setSubOrchestrationInstanceCreated(ev).build());
        out.toOrchestrators(DtMessages.start(cs.getInstanceId(),
                DtEvents.event(DtEvents.NO_ID, out.now()).setExecutionStarted(child).build(), t.executionId));
        t.openChildren.put(id, cs.getInstanceId());
    }

    private static ParentInstanceInfo parentInfo(Turn t, int taskId) {
        ExecutionStartedEvent started = t.startedEvent();
        ParentInstanceInfo.Builder p = ParentInstanceInfo.newBuilder().setTaskScheduledId(taskId)
                .setName(DtEvents.string(started.getName())).setOrchestrationInstance(t.self());
        if (started.hasVersion()) {
            p.setVersion(started.getVersion());
        }
        return p.build();
    }

    /**
     * Records the EventSent event and raises the event at the target. A send carried out in an earlier turn is
     * skipped: the worker reports it again because it never sees the EventSent record.
     */
    private static void sendEvent(Turn t, int id, SendEventAction se, AckBuilder out) {
        if (!t.sentEventIds.add(id)) {
            return;
        }
        String target = se.getInstance().getInstanceId();
        EventSentEvent.Builder sent = EventSentEvent.newBuilder().setInstanceId(target).setName(se.getName());
        EventRaisedEvent.Builder raised = EventRaisedEvent.newBuilder().setName(se.getName());
        if (se.hasData()) {
            sent.setInput(se.getData());
            raised.setInput(se.getData());
        }
        out.record(DtEvents.event(id, out.now()).setEventSent(sent).build());
        out.toOrchestrators(DtMessages.toInstance(target, 0,
                DtEvents.event(DtEvents.NO_ID, out.now()).setEventRaised(raised).build()));
    }

    /** Ends the execution and cancels the activities it leaves running; returns its final state. */
    private static DtState completeOrchestration(Turn t, int id, CompleteOrchestrationAction c, AckBuilder out) {
        DtState finalState = ExecutionEnd.apply(t, id, c, out);
        for (int open : t.openActivities) {
            out.cancel(new ScheduledActivityIdentifier(t.instance, t.executionId, open));
        }
        return finalState;
    }

    /**
     * Records the worker's custom status when it changed, and at the first turn of every execution after the first
     * (a new execution starts without one, whatever the previous one had).
     */
    private static void recordCustomStatus(Turn t, OrchestratorResponse response, AckBuilder out) {
        String custom = response.hasCustomStatus() && !response.getCustomStatus().getValue().isEmpty()
                ? response.getCustomStatus().getValue() : null;
        if (!Objects.equals(custom, t.lastCustomStatus) || (t.firstTurn && t.executionId > 1)) {
            out.recordCustomStatus(custom);
        }
    }

    /**
     * The turn's ack: a new execution records its metadata, and the client-visible state is written when the
     * execution ends, starts, or is suspended or resumed.
     */
    private static Ack finish(Turn t, DtState finalState, AckBuilder out) {
        ExecutionStartedEvent started = t.startedEvent();
        ExecutionMetadata md = t.firstTurn ? executionMetadata(started) : ExecutionMetadata.empty();
        DtState state = finalState;
        if (state == null && (t.firstTurn || t.suspensionChanged)) {
            state = t.running(started).withStatus(t.suspended ? OrchestrationStatus.ORCHESTRATION_STATUS_SUSPENDED
                    : OrchestrationStatus.ORCHESTRATION_STATUS_RUNNING);
        }
        if (state != null) {
            md = md.withStatus(DtState.providerStatus(state.status()), state.toJson());
        }
        return out.build(t.lockToken, t.executionId, md, state != null);
    }

    /**
     * The actions to carry out: the worker's, unless one of them is of a kind this sidecar cannot carry out
     * (an entity message it cannot deliver, terminating another instance, a rewind outside a rewind turn, or a kind
     * newer than this sidecar's protocol).
     * Then none of them is carried out and the execution fails instead, naming the action, so the instance never
     * waits for something that will not happen.
     */
    private static List<OrchestratorAction> carriedOut(Turn t, OrchestratorResponse response, AckBuilder out) {
        if (response.getIsPartial() || response.hasChunkIndex()) {
            return List.of(failing(t, response.getActionsCount() > 0 ? response.getActions(0).getId() : 0,
                    "a chunked orchestrator response (isPartial/chunkIndex) is not supported by the pgdurable "
                            + "sidecar"));
        }
        for (OrchestratorAction a : response.getActionsList()) {
            String unsupported = switch (a.getOrchestratorActionTypeCase()) {
                case SCHEDULETASK, CREATETIMER, CREATESUBORCHESTRATION, SENDEVENT, COMPLETEORCHESTRATION -> null;
                case SENDENTITYMESSAGE -> EntityMessages.unsupported(a.getSendEntityMessage(), out.now());
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

    /** What a new execution records about itself: name, version and parent. */
    static ExecutionMetadata executionMetadata(ExecutionStartedEvent started) {
        String parent = started.hasParentInstance()
                ? started.getParentInstance().getOrchestrationInstance().getInstanceId() : null;
        return ExecutionMetadata.of(started.getName(), started.hasVersion() ? started.getVersion().getValue() : "")
                .withParentInstanceId(parent);
    }

    static String newExecutionId() {
        return UUID.randomUUID().toString().replace("-", "");
    }
}
