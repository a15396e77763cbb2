package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.WorkItem;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The parts of one turn's ack as the worker's actions add to them: the history events, numbered in the order they
 * are recorded, the messages to the worker and orchestrator queues, and the activities the turn cancels. All of it
 * carries the one time the turn is applied at.
 */
final class AckBuilder {
    private final Instant now;
    private long nextEventId;
    private final List<Event> delta = new ArrayList<>();
    private final List<WorkItem> workerItems = new ArrayList<>();
    private final List<WorkItem> orchestratorItems = new ArrayList<>();
    private final List<ScheduledActivityIdentifier> cancelled = new ArrayList<>();

    AckBuilder(long firstEventId, Instant now) {
        this.nextEventId = firstEventId;
        this.now = now;
    }

    /** When the turn is applied: the time of every event and message it writes. */
    Instant now() {
        return now;
    }

    void record(HistoryEvent e) {
        delta.add(DtEvents.toEvent(nextEventId++, e));
    }

    /** Records the provider's own event that keeps the instance's custom status (null clears it). */
    void recordCustomStatus(String status) {
        delta.add(Events.customStatusUpdated(nextEventId++, status));
    }

    void toWorkers(WorkItem item) {
        workerItems.add(item);
    }

    void toOrchestrators(WorkItem item) {
        orchestratorItems.add(item);
    }

    void toOrchestrators(Collection<WorkItem> items) {
        orchestratorItems.addAll(items);
    }

    void cancel(ScheduledActivityIdentifier activity) {
        cancelled.add(activity);
    }

    TurnApplier.Ack build(String lockToken, long executionId, ExecutionMetadata metadata, boolean statusChanged) {
        return new TurnApplier.Ack(lockToken, executionId, delta, workerItems, orchestratorItems, metadata, cancelled,
                statusChanged);
    }
}
