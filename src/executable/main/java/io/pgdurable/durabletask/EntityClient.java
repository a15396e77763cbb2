package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityMetadata;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetEntityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryEntitiesResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityRequest;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.InstanceInfo;
import io.pgdurable.spi.ProviderException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.StreamSupport;

/**
 * The client half of durable entities: signals, reads, queries and storage cleaning (the mapping is described on
 * {@link EntityBatches}). Reads never wait for queued operations: they see the state of the last committed batch.
 */
final class EntityClient {
    /** Page size of a query that names none, and of one CleanEntityStorage call. */
    static final int DEFAULT_PAGE = 100;

    private final OrchestrationProvider provider;
    private final ProviderAdmin admin;
    private final Clock clock;

    EntityClient(OrchestrationProvider provider, Clock clock) {
        this.provider = provider;
        this.admin = provider.asManagementCapability().orElseThrow(() -> new IllegalArgumentException(
                "the Durable Task sidecar needs a provider with the management capability"));
        this.clock = clock;
    }

    void signal(SignalEntityRequest r) {
        String id = EntityBatches.requireEntityId(r.getInstanceId());
        String tooLong = EntityBatches.tooLong(id);
        if (tooLong != null) {
            throw new IllegalArgumentException(tooLong);
        }
        if (r.getName().isEmpty()) {
            throw new IllegalArgumentException("an operation name is required");
        }
        Instant now = clock.instant();
        String requestId = r.getRequestId().isEmpty() ? UUID.randomUUID().toString() : r.getRequestId();
        Duration delay = null;
        if (r.hasScheduledTime()) {
            long wait = DtEvents.ceilMillis(r.getScheduledTime()) - now.toEpochMilli();
            delay = wait > 0 ? Duration.ofMillis(wait) : null;
        }
        provider.enqueueAllForOrchestrator(EntityBatches.toEntity(id, EntityBatches.signal(requestId, r.getName(),
                DtEvents.text(r.hasInput(), r.getInput()), now), now), delay);
    }

    GetEntityResponse get(String instanceId, boolean includeState) {
        String id = EntityBatches.requireEntityId(instanceId);
        Optional<EntityMetadata> m = info(id).flatMap(i -> metadata(i, includeState));
        GetEntityResponse.Builder out = GetEntityResponse.newBuilder().setExists(m.isPresent());
        m.ifPresent(out::setEntity);
        return out.build();
    }

    /**
     * One page of entities in id order; the continuation token is the page's last id. Entities without state are
     * left out unless the query includes transient ones.
     */
    QueryEntitiesResponse query(EntityQuery q) {
        int page = q.hasPageSize() && q.getPageSize().getValue() > 0 ? q.getPageSize().getValue() : DEFAULT_PAGE;
        String prefix = q.hasInstanceIdStartsWith() ? q.getInstanceIdStartsWith().getValue() : "@";
        Instant from = q.hasLastModifiedFrom() ? DtEvents.instant(q.getLastModifiedFrom()) : null;
        Instant to = q.hasLastModifiedTo() ? DtEvents.instant(q.getLastModifiedTo()) : null;
        QueryEntitiesResponse.Builder out = QueryEntitiesResponse.newBuilder();
        String last = null;
        for (String id : entityIds(prefix, q.hasContinuationToken() ? q.getContinuationToken().getValue() : "")) {
            if (out.getEntitiesCount() >= page) {
                out.setContinuationToken(DtEvents.string(last));
                break;
            }
            last = id;
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty()) {
                continue;
            }
            Instant modified = Instant.ofEpochMilli(info.get().updatedAtMs());
            if ((from != null && modified.isBefore(from)) || (to != null && modified.isAfter(to))) {
                continue;
            }
            Optional<EntityMetadata> m = metadata(info.get(), q.getIncludeState());
            if (m.isPresent()) {
                out.addEntities(m.get());
            } else if (q.getIncludeTransient()) {
                out.addEntities(transientMetadata(info.get()));
            }
        }
        return out.build();
    }

    /**
     * Over a page of entities: releases locks whose holder has finished or is gone (an orchestration that ended
     * inside a critical section) by sending the entity the unlock its holder never sent, and removes entities with
     * nothing to keep (no state, no lock, nothing waiting).
     */
    CleanEntityStorageResponse clean(CleanEntityStorageRequest r) {
        int removed = 0;
        int released = 0;
        String last = null;
        CleanEntityStorageResponse.Builder out = CleanEntityStorageResponse.newBuilder();
        int seen = 0;
        for (String id : entityIds("@", r.hasContinuationToken() ? r.getContinuationToken().getValue() : "")) {
            if (seen++ >= DEFAULT_PAGE) {
                out.setContinuationToken(DtEvents.string(last));
                break;
            }
            last = id;
            Optional<InstanceInfo> info = info(id);
            if (info.isEmpty()) {
                continue;
            }
            EntityBatches.Stored stored = stored(info.get());
            if (r.getReleaseOrphanedLocks() && stored.lockedBy() != null
                    && holderEnded(stored.lockedBy()).orElse(true)) {
                Instant now = clock.instant();
                provider.enqueueAllForOrchestrator(EntityBatches.toEntity(id, EntityBatches.unlock(
                        stored.criticalSection(), stored.lockedBy(), now), now), null);
                released++;
            }
            if (r.getRemoveEmptyEntities()) {
                if (stored.empty()) {
                    // Not forced: only an entity the provider counts as finished goes (one with nothing to keep;
                    // a batch out with a worker would set it running again). Operations queued for it at this
                    // very moment go with it.
                    try {
                        removed += (int) admin.deleteInstancesAtomic(List.of(id), false).instancesDeleted();
                    } catch (ProviderException e) {
                        if (e.retryable()) {
                            throw e;
                        }
                    }
                }
            }
        }
        return out.setEmptyEntitiesRemoved(removed).setOrphanedLocksReleased(released).build();
    }

    /**
     * Whether a lock holder's execution has ended (its unlock is then on its way to the entity); empty when the holder
     * is gone (deleted), which sent no unlock: its lock stays until storage cleaning releases it.
     */
    private Optional<Boolean> holderEnded(String orchestration) {
        return info(orchestration).map(h -> DtState.parse(h.status(), h.output().orElse(null)).isTerminal());
    }

    private Iterable<String> entityIds(String prefix, String after) {
        Iterable<String> ids = InstanceIds.after(admin, after, prefix);
        return () -> StreamSupport.stream(ids.spliterator(), false).filter(EntityBatches::isEntityId).iterator();
    }

    private Optional<InstanceInfo> info(String id) {
        return InstanceClient.find(admin, id);
    }

    /** The entity's metadata, or empty when it has no state (the protocol's "does not exist"). */
    private Optional<EntityMetadata> metadata(InstanceInfo info, boolean includeState) {
        EntityBatches.Stored stored = stored(info);
        String state = stored.state();
        if (state == null) {
            return Optional.empty();
        }
        EntityMetadata m = transientMetadata(info, stored);
        return Optional.of(includeState ? m.toBuilder().setSerializedState(DtEvents.string(state)).build() : m);
    }

    private static EntityBatches.Stored stored(InstanceInfo info) {
        return EntityBatches.Stored.parse(info.output().orElse(null));
    }

    private EntityMetadata transientMetadata(InstanceInfo info) {
        return transientMetadata(info, stored(info));
    }

    /**
     * What is known of an entity besides its state: last change, lock holder, operations waiting for the lock. A
     * holder whose execution has finished is not reported: its unlock is already on its way to the entity (the
     * sidecar sends it with the execution's end) but is carried out by the entity's next batch, and a client that
     * saw the orchestration complete must not see the lock still held.
     */
    private EntityMetadata transientMetadata(InstanceInfo info, EntityBatches.Stored s) {
        EntityMetadata.Builder m = EntityMetadata.newBuilder().setInstanceId(info.instanceId())
                .setLastModifiedTime(DtEvents.timestampMillis(info.updatedAtMs()))
                .setBacklogQueueSize(s.deferred().size());
        if (s.lockedBy() != null && !holderEnded(s.lockedBy()).orElse(false)) {
            m.setLockedBy(DtEvents.string(s.lockedBy()));
        }
        return m.build();
    }
}
