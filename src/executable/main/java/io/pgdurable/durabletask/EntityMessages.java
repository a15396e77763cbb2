package io.pgdurable.durabletask;

import com.google.protobuf.Timestamp;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityLockRequestedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationCalledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationSignaledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityUnlockSentEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEntityMessageAction;
import java.time.Instant;
import java.util.List;

/**
 * The messages an orchestration sends to entities: which ones this sidecar carries out, what the orchestration's
 * history records of each and what reaches the entity, and the locks an ending execution lets go of. The entity's
 * side of the exchange is {@link EntityBatches}.
 */
final class EntityMessages {
    private EntityMessages() {}

    /** Null for an entity message this sidecar carries out: one due now, to entity ids only; else why not. */
    static String unsupported(SendEntityMessageAction m, Instant now) {
        Timestamp when = null;
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

    /**
     * Carries out one entity message that passed {@link #unsupported}. Replies come back to this instance whatever
     * the worker named as parent.
     */
    static void send(Turn t, int id, SendEntityMessageAction m, AckBuilder out) {
        HistoryEvent.Builder sent = DtEvents.event(id, out.now());
        HistoryEvent.Builder message = DtEvents.event(DtEvents.NO_ID, out.now());
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
                sent.setEntityOperationCalled(c.toBuilder().clearParentInstanceId().clearParentExecutionId());
                message.setEntityOperationCalled(c.toBuilder().clearTargetInstanceId()
                        .setParentInstanceId(DtEvents.string(t.instance))
                        .setParentExecutionId(t.self().getExecutionId()));
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
        t.trackLocks(recorded);
        out.record(recorded);
        out.toOrchestrators(EntityBatches.toEntity(EntityBatches.requireEntityId(target), message.build(),
                out.now()));
    }

    /**
     * Unlocks every entity the execution still holds: an execution that ends inside a critical section (failed,
     * terminated, or simply never released) lets go of its locks, so the entities do not wait for an unlock that
     * can no longer come.
     */
    static void releaseLocks(Turn t, AckBuilder out) {
        t.heldLocks.forEach((section, entities) -> entities.forEach(entity -> out.toOrchestrators(
                EntityBatches.toEntity(EntityBatches.requireEntityId(entity),
                        EntityBatches.unlock(section, t.instance, out.now()), out.now()))));
        t.heldLocks.clear();
    }
}
