package io.pgdurable.durabletask;

import io.grpc.StatusException;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches work from the provider for a stream's lanes and hands it to the worker as Durable Task work items: an
 * orchestration turn, an entity's batch, activities. What the worker cannot run is released (later, when retrying
 * at once would only fail again); what needs no worker is committed here.
 */
final class WorkFetcher {
    private static final Logger LOG = LoggerFactory.getLogger(WorkFetcher.class);

    private final OrchestrationProvider provider;
    private final ProviderAdmin admin;
    private final TurnApplier applier;
    private final SidecarConfig config;
    private final HeldItems held;
    private final WorkResults results;

    WorkFetcher(OrchestrationProvider provider, ProviderAdmin admin, TurnApplier applier, SidecarConfig config,
                HeldItems held, WorkResults results) {
        this.provider = provider;
        this.admin = admin;
        this.applier = applier;
        this.config = config;
        this.held = held;
        this.results = results;
    }

    /** One fetch; true when a turn was handed to the worker (its slot stays taken until the result). */
    boolean fetchTurn(WorkStream s) {
        Optional<FetchedOrchestration> f = provider.fetchOrchestrationItem(config.lockTimeout(),
                config.pollTimeout(), null);
        if (f.isEmpty()) {
            idle();
            return false;
        }
        FetchedOrchestration fetched = f.get();
        if (EntityBatches.isEntityId(fetched.item().instance())) {
            return handEntityBatch(s, fetched);
        }
        if (fetched.item().historyError().isPresent()) {
            LOG.warn("instance {}: history cannot be read ({}); retrying later", fetched.item().instance(),
                    fetched.item().historyError().get());
            held.abandonTurn(fetched.lockToken(), Duration.ofSeconds(5));
            return false;
        }
        Turn turn;
        try {
            turn = applier.prepare(fetched);
        } catch (RuntimeException e) {
            LOG.warn("instance {}: cannot prepare the turn ({}); retrying later", fetched.item().instance(),
                    e.toString());
            held.abandonTurn(fetched.lockToken(), Duration.ofSeconds(5));
            return false;
        }
        if (!turn.needsWorker()) {
            try {
                results.commit(TurnApplier.consumeOnly(turn), turn.instance);
            } catch (StatusException e) {
                LOG.debug("instance {}: consuming messages failed: {}", turn.instance, e.getMessage());
            }
            return false;
        }
        return handOver(s, WorkItem.newBuilder().setOrchestratorRequest(turn.request), held.holdTurn(turn, s));
    }

    /** An entity's due operations as one batch for the worker; true when handed over. */
    private boolean handEntityBatch(WorkStream s, FetchedOrchestration fetched) {
        String id = fetched.item().instance();
        Optional<ProviderAdmin.InstanceInfo> info; // empty: a new entity
        try {
            info = InstanceClient.find(admin, id);
        } catch (ProviderException retryable) {
            held.abandonTurn(fetched.lockToken(), Duration.ofSeconds(1));
            throw retryable;
        }
        EntityBatches.Batch batch = EntityBatches.prepare(fetched, info.isPresent(),
                info.flatMap(ProviderAdmin.InstanceInfo::output).orElse(null), Instant.now());
        if (batch.request == null) {
            // Only lock requests, unlocks or messages that wait for a lock: nothing for the worker.
            try {
                results.commitEntity(EntityBatches.withoutWorker(batch), id);
            } catch (StatusException e) {
                LOG.debug("entity {}: consuming messages failed: {}", id, e.getMessage());
            }
            return false;
        }
        return handOver(s, WorkItem.newBuilder().setEntityRequest(batch.request), held.holdEntity(batch, s));
    }

    /** One fetch of up to {@code permits} activities; returns how many were handed to the worker. */
    int fetchActivities(WorkStream s, int permits) {
        List<FetchedWorkItem> fetched;
        if (permits == 1) {
            // The single-item fetch, as for a worker that declares no concurrency (1.5.0).
            fetched = provider.fetchWorkItem(config.lockTimeout(), config.pollTimeout(), null,
                    TagFilter.defaultOnly()).map(List::of).orElse(List.of());
        } else {
            fetched = provider.fetchWorkItems(config.lockTimeout(), WorkBatch.upTo(permits, config.pollTimeout()),
                    null, TagFilter.defaultOnly());
        }
        if (fetched.isEmpty()) {
            idle();
            return 0;
        }
        int handed = 0;
        for (FetchedWorkItem f : fetched) {
            if (handActivity(s, f)) {
                handed++;
            }
        }
        return handed;
    }

    private boolean handActivity(WorkStream s, FetchedWorkItem fetched) {
        if (!(fetched.item() instanceof io.pgdurable.spi.WorkItem.ActivityExecute a)) {
            // Unreachable with this provider (only activities go to the worker queue); never drop it.
            held.abandonActivity(fetched.lockToken(), Duration.ofSeconds(30));
            return false;
        }
        ActivityRequest request;
        try {
            request = DtPayload.unwrap(a.input(), ActivityRequest.parser());
        } catch (IllegalArgumentException e) {
            // Not written by this sidecar (another runtime shares the schema?): leave it for its owner.
            LOG.warn("activity {} of {} is not a Durable Task activity ({}); releasing it", a.name(),
                    a.instance(), e.getMessage());
            held.abandonActivity(fetched.lockToken(), Duration.ofSeconds(30));
            return false;
        }
        HeldItems.HeldActivity mine = held.holdActivity(new HeldItems.ActivityKey(a.instance(), (int) a.id()),
                fetched.lockToken(), a.executionId(), s);
        if (mine == null) {
            held.abandonActivity(fetched.lockToken(), Duration.ofSeconds(1));
            return false;
        }
        return handOver(s, WorkItem.newBuilder().setActivityRequest(request), mine);
    }

    /** Sends a held item with its completion token; true when sent, else it is let go of at once. */
    private boolean handOver(WorkStream s, WorkItem.Builder item, HeldItems.Held mine) {
        if (s.send(item.setCompletionToken(mine.token()).build())) {
            return true;
        }
        held.unsent(mine);
        return false;
    }

    /** Without long polling an empty fetch returns at once: the lane waits before the next one. */
    private void idle() {
        if (!config.longPolling()) {
            WorkDispatcher.pause(config.shortPollInterval());
        }
    }
}
