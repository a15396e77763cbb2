package io.pgdurable.durabletask;

import io.grpc.Status;
import io.grpc.StatusException;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import java.util.HashMap;
import java.util.Map;

/**
 * The checks of what a worker sends back, made before the item is taken back: a result refused here leaves the item
 * with the worker, which may send a corrected one or abandon it (when its stream ends, the item is released as
 * usual). Actions the sidecar understands but cannot carry out are not refused here: they fail the orchestration,
 * naming the action (see {@link TurnApplier}).
 */
final class WorkerResultRules {
    private final FieldRules fields;

    WorkerResultRules(FieldRules fields) {
        this.fields = fields;
    }

    void orchestratorResponse(OrchestratorResponse r) throws StatusException {
        fields.requireId("instanceId", r.getInstanceId());
        FieldRules.optionalToken("completionToken", r.getCompletionToken());
        int max = fields.limits().maxActionsPerTurn();
        if (r.getActionsCount() > max) {
            throw Status.RESOURCE_EXHAUSTED.withDescription("the response carries " + r.getActionsCount()
                    + " actions; one turn takes at most " + max + " (sidecar setting maxActionsPerTurn)")
                    .asException();
        }
        if (r.hasCustomStatus()) {
            fields.storable("customStatus", r.getCustomStatus().getValue());
        }
        Map<Integer, Integer> positionOfId = new HashMap<>();
        for (int i = 0; i < r.getActionsCount(); i++) {
            OrchestratorAction a = r.getActions(i);
            Integer earlier = positionOfId.putIfAbsent(a.getId(), i);
            if (earlier != null) {
                throw FieldRules.invalid("actions[" + earlier + "] and actions[" + i + "] both have id " + a.getId()
                        + "; each action of a turn needs an id of its own");
            }
            action("actions[" + i + "]", a);
        }
    }

    private void action(String at, OrchestratorAction a) throws StatusException {
        switch (a.getOrchestratorActionTypeCase()) {
            case SCHEDULETASK -> {
                fields.requireName(at + ".scheduleTask.name", a.getScheduleTask().getName());
                if (a.getScheduleTask().hasVersion()) {
                    fields.optionalName(at + ".scheduleTask.version", a.getScheduleTask().getVersion().getValue());
                }
            }
            case CREATESUBORCHESTRATION -> {
                fields.optionalId(at + ".createSubOrchestration.instanceId",
                        a.getCreateSubOrchestration().getInstanceId());
                fields.requireName(at + ".createSubOrchestration.name", a.getCreateSubOrchestration().getName());
                if (a.getCreateSubOrchestration().hasVersion()) {
                    fields.optionalName(at + ".createSubOrchestration.version",
                            a.getCreateSubOrchestration().getVersion().getValue());
                }
            }
            case CREATETIMER -> FieldRules.timestamp(at + ".createTimer.fireAt", a.getCreateTimer().getFireAt());
            case SENDEVENT -> {
                fields.requireId(at + ".sendEvent.instance.instanceId",
                        a.getSendEvent().getInstance().getInstanceId());
                fields.optionalName(at + ".sendEvent.name", a.getSendEvent().getName());
            }
            case COMPLETEORCHESTRATION -> {
                if (a.getCompleteOrchestration().getOrchestrationStatus() == OrchestrationStatus.UNRECOGNIZED) {
                    throw FieldRules.invalid(at + ".completeOrchestration.orchestrationStatus "
                            + a.getCompleteOrchestration().getOrchestrationStatusValue()
                            + " is not an orchestration status of this protocol");
                }
                if (a.getCompleteOrchestration().hasNewVersion()) {
                    fields.optionalName(at + ".completeOrchestration.newVersion",
                            a.getCompleteOrchestration().getNewVersion().getValue());
                }
            }
            default -> {
                // Refused or unknown kinds fail the orchestration instead (TurnApplier names them).
            }
        }
    }

    void activityResponse(ActivityResponse r) throws StatusException {
        fields.requireId("instanceId", r.getInstanceId());
        FieldRules.optionalToken("completionToken", r.getCompletionToken());
    }
}
