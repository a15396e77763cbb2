package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TimerFiredEvent;
import io.pgdurable.spi.WorkItem;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Durable Task events sent to an instance ("new events") as provider work items, and back. Each event travels in the
 * work-item variant with the same meaning, so the provider's routing, timer visibility, orphan rule and activity
 * identity all apply; the event itself rides in the variant's opaque payload. Events with no such variant
 * (suspend, resume) travel as {@link WorkItem.QueueMessage}s named after their kind.
 */
final class DtMessages {
    /** Side field of a child's start message: the parent's provider execution, to route the result back. */
    static final String PARENT_EXECUTION = "parent_execution_id";
    /** Side field of a terminate message: whether the instance's running children are terminated too. */
    static final String RECURSIVE = "recursive";

    private DtMessages() {}

    /** A decoded message: the event, the provider execution it answers (0 when not bound to one) and side fields. */
    record Incoming(HistoryEvent event, long executionId, boolean starts, long parentExecutionId, boolean recursive,
                    List<HistoryEvent> carried) {}

    static WorkItem start(String instance, HistoryEvent started, long parentExecutionId) {
        ExecutionStartedEvent s = started.getExecutionStarted();
        String parent = s.hasParentInstance() ? s.getParentInstance().getOrchestrationInstance().getInstanceId() : null;
        Long parentId = s.hasParentInstance() ? (long) s.getParentInstance().getTaskScheduledId() : null;
        return new WorkItem.StartOrchestration(instance, s.getName(),
                DtPayload.wrap(started, Map.of(PARENT_EXECUTION, parentExecutionId)),
                DtEvents.text(s.hasVersion(), s.getVersion()), parent, parentId, 1);
    }

    static WorkItem continueAsNew(String instance, HistoryEvent started, long parentExecutionId,
                                  List<HistoryEvent> carried) {
        ExecutionStartedEvent s = started.getExecutionStarted();
        List<WorkItem.CarriedEvent> events = new ArrayList<>();
        for (HistoryEvent e : carried) {
            events.add(new WorkItem.CarriedEvent(DtEvents.kind(e), DtPayload.wrap(e)));
        }
        return new WorkItem.ContinueAsNew(instance, s.getName(),
                DtPayload.wrap(started, Map.of(PARENT_EXECUTION, parentExecutionId)),
                DtEvents.text(s.hasVersion(), s.getVersion()), events, null);
    }

    /** A message for an instance from a client, a worker or another instance. */
    static WorkItem toInstance(String instance, long executionId, HistoryEvent e) {
        return switch (e.getEventTypeCase()) {
            case TASKCOMPLETED -> new WorkItem.ActivityCompleted(instance, executionId,
                    e.getTaskCompleted().getTaskScheduledId(), DtPayload.wrap(e));
            case TASKFAILED -> new WorkItem.ActivityFailed(instance, executionId,
                    e.getTaskFailed().getTaskScheduledId(), DtPayload.wrap(e));
            case SUBORCHESTRATIONINSTANCECOMPLETED -> new WorkItem.SubOrchCompleted(instance, executionId,
                    e.getSubOrchestrationInstanceCompleted().getTaskScheduledId(), DtPayload.wrap(e));
            case SUBORCHESTRATIONINSTANCEFAILED -> new WorkItem.SubOrchFailed(instance, executionId,
                    e.getSubOrchestrationInstanceFailed().getTaskScheduledId(), DtPayload.wrap(e));
            case TIMERFIRED -> new WorkItem.TimerFired(instance, executionId, e.getTimerFired().getTimerId(),
                    DtEvents.ceilMillis(e.getTimerFired().getFireAt()));
            case EVENTRAISED -> new WorkItem.ExternalRaised(instance, e.getEventRaised().getName(),
                    DtPayload.wrap(e));
            case EXECUTIONSUSPENDED, EXECUTIONRESUMED, ENTITYOPERATIONCOMPLETED, ENTITYOPERATIONFAILED,
                 ENTITYLOCKGRANTED, EXECUTIONREWOUND, ORCHESTRATORSTARTED ->
                    new WorkItem.QueueMessage(instance, DtEvents.kind(e),
                    DtPayload.wrap(e));
            default -> throw new IllegalArgumentException("no message form for a " + DtEvents.kind(e) + " event");
        };
    }

    static WorkItem terminate(String instance, HistoryEvent terminated, boolean recursive) {
        return new WorkItem.CancelInstance(instance, DtPayload.wrap(terminated, Map.of(RECURSIVE, recursive)));
    }

    /** Decodes a fetched message; throws {@link IllegalArgumentException} for one this sidecar did not write. */
    static Incoming decode(WorkItem item) {
        if (item instanceof WorkItem.StartOrchestration s) {
            return new Incoming(DtPayload.unwrap(s.input(), HistoryEvent.parser()), 0, true,
                    DtPayload.longField(s.input(), PARENT_EXECUTION, 0), false, List.of());
        }
        if (item instanceof WorkItem.ContinueAsNew c) {
            List<HistoryEvent> carried = new ArrayList<>();
            for (WorkItem.CarriedEvent e : c.carryForwardEvents()) {
                carried.add(DtPayload.unwrap(e.data(), HistoryEvent.parser()));
            }
            return new Incoming(DtPayload.unwrap(c.input(), HistoryEvent.parser()), 0, true,
                    DtPayload.longField(c.input(), PARENT_EXECUTION, 0), false, carried);
        }
        if (item instanceof WorkItem.ActivityCompleted a) {
            return bound(a.result(), a.executionId());
        }
        if (item instanceof WorkItem.ActivityFailed a) {
            return bound(a.details(), a.executionId());
        }
        if (item instanceof WorkItem.SubOrchCompleted s) {
            return bound(s.result(), s.parentExecutionId());
        }
        if (item instanceof WorkItem.SubOrchFailed s) {
            return bound(s.details(), s.parentExecutionId());
        }
        if (item instanceof WorkItem.TimerFired t) {
            // The exact due time is in the TimerCreated event; the worker matches a firing by its id alone.
            HistoryEvent e = DtEvents.event(DtEvents.NO_ID, java.time.Instant.ofEpochMilli(t.fireAtMs()))
                    .setTimerFired(TimerFiredEvent.newBuilder().setTimerId((int) t.id())
                            .setFireAt(DtEvents.timestampMillis(t.fireAtMs())))
                    .build();
            return new Incoming(e, t.executionId(), false, 0, false, List.of());
        }
        if (item instanceof WorkItem.ExternalRaised x) {
            return unbound(x.data(), false);
        }
        if (item instanceof WorkItem.QueueMessage q) {
            return unbound(q.data(), false);
        }
        if (item instanceof WorkItem.CancelInstance c) {
            return unbound(c.reason(), DtPayload.booleanField(c.reason(), RECURSIVE));
        }
        throw new IllegalArgumentException("unexpected " + item.kind() + " message for an orchestration");
    }

    private static Incoming bound(String payload, long executionId) {
        return new Incoming(DtPayload.unwrap(payload, HistoryEvent.parser()), executionId, false, 0, false,
                List.of());
    }

    private static Incoming unbound(String payload, boolean recursive) {
        return new Incoming(DtPayload.unwrap(payload, HistoryEvent.parser()), 0, false, 0, recursive, List.of());
    }
}
