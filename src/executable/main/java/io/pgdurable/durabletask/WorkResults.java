package io.pgdurable.durabletask;

import io.grpc.Status;
import io.grpc.StatusException;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailedEvent;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits what the workers send back: a turn's actions, an entity batch's result, an activity's result, each as one
 * provider ack. A result for an item no longer held here (its stream ended, so it was abandoned and runs again) is
 * ignored; an error would only make the 1.5.0 worker drop its stream and pause for 5 s.
 */
final class WorkResults {
    private static final Logger LOG = LoggerFactory.getLogger(WorkResults.class);

    private final OrchestrationProvider provider;
    private final TurnApplier applier;
    private final HeldItems held;
    private final InstanceWatch watch;

    WorkResults(OrchestrationProvider provider, TurnApplier applier, HeldItems held, InstanceWatch watch) {
        this.provider = provider;
        this.applier = applier;
        this.held = held;
        this.watch = watch;
    }

    void completeOrchestration(OrchestratorResponse response) throws StatusException {
        HeldItems.HeldTurn turn = held.takeTurn(response.getInstanceId(), response.getCompletionToken());
        if (turn == null) {
            LOG.info("ignoring a late orchestrator result for {}: the turn is no longer held here{}",
                    response.getInstanceId(), response.getCompletionToken().isEmpty() ? ""
                            : " under completion token " + response.getCompletionToken());
            return;
        }
        // The slot is freed only after the commit: a fetch started earlier would find the instance still locked
        // and park until the fallback probe, instead of seeing the messages this turn sends to itself.
        try {
            TurnApplier.Ack ack;
            try {
                ack = applier.complete(turn.turn(), response);
            } catch (RuntimeException e) {
                held.abandonTurn(turn.turn().lockToken, Duration.ofSeconds(1));
                LOG.error("instance {}: could not apply the worker's actions", turn.turn().instance, e);
                throw Status.INTERNAL.withDescription("could not apply the actions: " + e.getMessage())
                        .asException();
            }
            commit(ack, turn.turn().instance);
        } finally {
            held.release(turn.stream().orchestrationSlot);
        }
    }

    /** Commits a turn's ack; a commit that fails for good leaves the turn to run again. */
    void commit(TurnApplier.Ack ack, String instance) throws StatusException {
        try {
            provider.ackOrchestrationItem(ack.lockToken(), ack.executionId(), ack.historyDelta(), ack.workerItems(),
                    ack.orchestratorItems(), ack.metadata(), ack.cancelledActivities());
        } catch (ProviderException e) {
            if (e.retryable()) {
                held.abandonTurn(ack.lockToken(), null);
                throw Status.UNAVAILABLE.withDescription("could not commit the turn of " + instance + ": "
                        + e.getMessage()).withCause(e).asException();
            }
            // Most often the lease was lost (expired, or the instance was purged): the turn runs again elsewhere.
            LOG.warn("instance {}: the turn was not committed: {}", instance, e.getMessage());
            held.abandonTurn(ack.lockToken(), Duration.ofSeconds(1));
            return;
        }
        if (ack.statusChanged()) {
            watch.signal(instance);
        }
    }

    /**
     * Commits an entity batch: the new state, the responses to calling orchestrations, the entity's own signals and
     * starts. A result that reports a failure of the whole batch (not of an operation) releases the batch to run
     * again a second later, as the SDKs expect.
     */
    void completeEntity(EntityBatchResult result) throws StatusException {
        if (result.getCompletionToken().isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("an entity batch result needs its work item's "
                    + "completionToken").asException();
        }
        HeldItems.HeldEntity entity = held.takeEntity(result.getCompletionToken());
        if (entity == null) {
            LOG.info("ignoring a late entity batch result: the batch is no longer held here");
            return;
        }
        EntityBatches.Batch b = entity.batch();
        try {
            if (result.hasFailureDetails()) {
                LOG.warn("entity {}: the worker failed the batch ({}); it runs again", b.instance,
                        EntityBatches.describe(result.getFailureDetails()));
                held.abandonTurn(b.lockToken, Duration.ofSeconds(1));
                return;
            }
            EntityBatches.Ack ack;
            try {
                ack = EntityBatches.complete(b, result, Instant.now());
            } catch (RuntimeException e) {
                held.abandonTurn(b.lockToken, Duration.ofSeconds(1));
                throw Status.INVALID_ARGUMENT.withDescription("entity " + b.instance + ": " + e.getMessage())
                        .asException();
            }
            commitEntity(ack, b.instance);
        } finally {
            held.release(entity.stream().orchestrationSlot);
        }
    }

    /** An entity batch's ack: an entity is always at its first execution and never changes a watched status. */
    void commitEntity(EntityBatches.Ack ack, String entity) throws StatusException {
        commit(new TurnApplier.Ack(ack.lockToken(), 1, List.of(), List.of(), ack.orchestratorItems(),
                ack.metadata(), List.of(), false), entity);
    }

    void completeActivity(ActivityResponse response) throws StatusException {
        HeldItems.HeldActivity activity = held.takeActivity(
                new HeldItems.ActivityKey(response.getInstanceId(), response.getTaskId()),
                response.getCompletionToken());
        if (activity == null) {
            LOG.info("ignoring a late result of activity #{} of {}: it is no longer held here",
                    response.getTaskId(), response.getInstanceId());
            return;
        }
        try {
            ackActivity(activity, response);
        } finally {
            held.release(activity.stream().activitySlot);
        }
    }

    /** Sends the activity's result to its orchestration as a TaskCompleted or TaskFailed event. */
    private void ackActivity(HeldItems.HeldActivity activity, ActivityResponse response) throws StatusException {
        HistoryEvent.Builder e = DtEvents.event(DtEvents.NO_ID, Instant.now());
        if (response.hasFailureDetails()) {
            e.setTaskFailed(TaskFailedEvent.newBuilder().setTaskScheduledId(response.getTaskId())
                    .setFailureDetails(response.getFailureDetails()));
        } else {
            TaskCompletedEvent.Builder ok = TaskCompletedEvent.newBuilder().setTaskScheduledId(response.getTaskId());
            if (response.hasResult()) {
                ok.setResult(response.getResult());
            }
            e.setTaskCompleted(ok);
        }
        try {
            provider.ackWorkItem(activity.lockToken(), DtMessages.toInstance(response.getInstanceId(),
                    activity.executionId(), e.build()));
        } catch (ProviderException ex) {
            if (ex.retryable()) {
                held.abandonActivity(activity.lockToken(), null);
                throw Status.UNAVAILABLE.withDescription("could not record the activity result: "
                        + ex.getMessage()).withCause(ex).asException();
            }
            // The lease was lost (expired and taken by another worker, or the orchestration was purged or
            // finished and cancelled it): that other attempt's result is the one that counts.
            LOG.warn("activity #{} of {}: result discarded: {}", response.getTaskId(), response.getInstanceId(),
                    ex.getMessage());
        }
    }
}
