package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.ContinueAsNewEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionTerminatedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.ParentInstanceInfo;
import io.pgdurable.durabletask.protocol.OrchestratorService.SubOrchestrationInstanceCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.SubOrchestrationInstanceFailedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailureDetails;
import java.util.Locale;

/**
 * The end of an execution, the worker's {@code completeOrchestration} action: either a continue-as-new, which starts
 * the instance's next execution with a message to itself, or a completion, recorded in the history and reported to
 * a parent orchestration, and on a recursive termination passed on to the children still running. Either way the
 * execution lets go of the entity locks it holds.
 */
final class ExecutionEnd {
    private ExecutionEnd() {}

    /** Records the end of {@code t}'s execution; returns its final client-visible state. */
    static DtState apply(Turn t, int id, CompleteOrchestrationAction c, AckBuilder out) {
        EntityMessages.releaseLocks(t, out);
        DtState state = t.running(t.startedEvent());
        String result = DtEvents.text(c.hasResult(), c.getResult());
        if (c.getOrchestrationStatus() == OrchestrationStatus.ORCHESTRATION_STATUS_CONTINUED_AS_NEW) {
            continueAsNew(t, id, c, out);
            return state.finished(c.getOrchestrationStatus(), result, null);
        }
        TaskFailureDetails failure = complete(id, c, out);
        if (t.startedEvent().hasParentInstance()) {
            tellParent(t, c, failure, out);
        }
        if (c.getOrchestrationStatus() == OrchestrationStatus.ORCHESTRATION_STATUS_TERMINATED
                && t.terminateRecursive) {
            terminateChildren(t, c, out);
        }
        return state.finished(c.getOrchestrationStatus(), result, failure);
    }

    /** Records the ContinueAsNew event and sends the instance the start of its next execution. */
    private static void continueAsNew(Turn t, int id, CompleteOrchestrationAction c, AckBuilder out) {
        ContinueAsNewEvent.Builder can = ContinueAsNewEvent.newBuilder();
        if (c.hasResult()) {
            can.setInput(c.getResult());
        }
        out.record(DtEvents.event(id, out.now()).setContinueAsNew(can).build());
        ExecutionStartedEvent.Builder next = t.startedEvent().toBuilder().clearInput().clearScheduledStartTimestamp()
                .setOrchestrationInstance(OrchestrationInstance.newBuilder().setInstanceId(t.instance)
                        .setExecutionId(DtEvents.string(TurnApplier.newExecutionId())));
        if (c.hasResult()) {
            next.setInput(c.getResult());
        }
        if (c.hasNewVersion()) {
            next.setVersion(c.getNewVersion());
        }
        out.toOrchestrators(DtMessages.continueAsNew(t.instance,
                DtEvents.event(DtEvents.NO_ID, out.now()).setExecutionStarted(next).build(), t.parentExecutionId,
                c.getCarryoverEventsList()));
    }

    /** Records the ExecutionCompleted event; returns its failure details (null for none). */
    private static TaskFailureDetails complete(int id, CompleteOrchestrationAction c, AckBuilder out) {
        OrchestrationStatus status = c.getOrchestrationStatus();
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
        out.record(DtEvents.event(id, out.now()).setExecutionCompleted(done).build());
        return failure;
    }

    /**
     * Sends the parent orchestration the sub-orchestration's outcome: its result on completion, else the failure,
     * or for an end without failure details (terminated, canceled) a failure that names the status.
     */
    private static void tellParent(Turn t, CompleteOrchestrationAction c, TaskFailureDetails failure,
                                   AckBuilder out) {
        OrchestrationStatus status = c.getOrchestrationStatus();
        ParentInstanceInfo p = t.startedEvent().getParentInstance();
        HistoryEvent toParent;
        if (status == OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED) {
            SubOrchestrationInstanceCompletedEvent.Builder ok = SubOrchestrationInstanceCompletedEvent.newBuilder()
                    .setTaskScheduledId(p.getTaskScheduledId());
            if (c.hasResult()) {
                ok.setResult(c.getResult());
            }
            toParent = DtEvents.event(DtEvents.NO_ID, out.now()).setSubOrchestrationInstanceCompleted(ok).build();
        } else {
            String result = DtEvents.text(c.hasResult(), c.getResult());
            TaskFailureDetails why = failure != null ? failure : TaskFailureDetails.newBuilder()
                    .setErrorType("Orchestration" + capitalized(DtState.shortName(status)))
                    .setErrorMessage("sub-orchestration " + t.instance + " ended with status "
                            + DtState.shortName(status) + (result != null ? ": " + result : ""))
                    .build();
            toParent = DtEvents.event(DtEvents.NO_ID, out.now()).setSubOrchestrationInstanceFailed(
                    SubOrchestrationInstanceFailedEvent.newBuilder()
                            .setTaskScheduledId(p.getTaskScheduledId()).setFailureDetails(why)).build();
        }
        out.toOrchestrators(DtMessages.toInstance(p.getOrchestrationInstance().getInstanceId(),
                t.parentExecutionId, toParent));
    }

    /** Passes a recursive termination on to the children that have not ended, with the same reason. */
    private static void terminateChildren(Turn t, CompleteOrchestrationAction c, AckBuilder out) {
        for (String child : t.openChildren.values()) {
            ExecutionTerminatedEvent.Builder term = ExecutionTerminatedEvent.newBuilder();
            if (c.hasResult()) {
                term.setInput(c.getResult());
            }
            out.toOrchestrators(DtMessages.terminate(child,
                    DtEvents.event(DtEvents.NO_ID, out.now()).setExecutionTerminated(term).build(), true));
        }
    }

    private static String capitalized(String upper) {
        return upper.charAt(0) + upper.substring(1).toLowerCase(Locale.ROOT);
    }
}
