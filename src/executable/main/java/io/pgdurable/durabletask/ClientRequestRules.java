package io.pgdurable.durabletask;

import com.google.protobuf.StringValue;
import com.google.protobuf.Timestamp;
import io.grpc.StatusException;
import io.pgdurable.durabletask.protocol.DaprForkAliases.ListInstanceIDsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstanceFilter;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RaiseEventRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityRequest;

/**
 * The checks of the client RPCs' requests, made before anything is read or stored: ids and names that are given
 * where needed, fit their limits and can be stored, and timestamps within protobuf's range. RPCs that only name an
 * instance use {@link #instance}.
 */
final class ClientRequestRules {
    private final FieldRules fields;

    ClientRequestRules(FieldRules fields) {
        this.fields = fields;
    }

    /** A request that names one instance (get, wait, terminate, suspend, resume, rewind, restart, history). */
    void instance(String instanceId) throws StatusException {
        fields.requireId("instanceId", instanceId);
    }

    void start(CreateInstanceRequest r) throws StatusException {
        fields.optionalId("instanceId", r.getInstanceId());
        fields.requireName("name", r.getName());
        if (r.hasVersion()) {
            fields.optionalName("version", r.getVersion().getValue());
        }
        if (r.hasScheduledStartTimestamp()) {
            FieldRules.timestamp("scheduledStartTimestamp", r.getScheduledStartTimestamp());
        }
    }

    void raise(RaiseEventRequest r) throws StatusException {
        fields.requireId("instanceId", r.getInstanceId());
        fields.requireName("name", r.getName());
    }

    void query(InstanceQuery q) throws StatusException {
        optionalId("query.instanceIdPrefix", q.hasInstanceIdPrefix(), q.getInstanceIdPrefix());
        optionalId("query.continuationToken", q.hasContinuationToken(), q.getContinuationToken());
        timestamp("query.createdTimeFrom", q.hasCreatedTimeFrom(), q.getCreatedTimeFrom());
        timestamp("query.createdTimeTo", q.hasCreatedTimeTo(), q.getCreatedTimeTo());
    }

    void list(ListInstanceIdsRequest r) throws StatusException {
        optionalId("lastInstanceKey", r.hasLastInstanceKey(), r.getLastInstanceKey());
        timestamp("completedTimeFrom", r.hasCompletedTimeFrom(), r.getCompletedTimeFrom());
        timestamp("completedTimeTo", r.hasCompletedTimeTo(), r.getCompletedTimeTo());
    }

    void list(ListInstanceIDsRequest r) throws StatusException {
        if (r.hasContinuationToken()) {
            fields.optionalId("continuationToken", r.getContinuationToken());
        }
    }

    void purge(PurgeInstancesRequest r) throws StatusException {
        switch (r.getRequestCase()) {
            case INSTANCEID -> fields.requireId("instanceId", r.getInstanceId());
            case INSTANCEBATCH -> {
                for (int i = 0; i < r.getInstanceBatch().getInstanceIdsCount(); i++) {
                    fields.requireId("instanceBatch.instanceIds[" + i + "]",
                            r.getInstanceBatch().getInstanceIds(i));
                }
            }
            case PURGEINSTANCEFILTER -> {
                PurgeInstanceFilter f = r.getPurgeInstanceFilter();
                timestamp("purgeInstanceFilter.createdTimeFrom", f.hasCreatedTimeFrom(), f.getCreatedTimeFrom());
                timestamp("purgeInstanceFilter.createdTimeTo", f.hasCreatedTimeTo(), f.getCreatedTimeTo());
            }
            default -> throw FieldRules.invalid("name what to purge: an instanceId, an instanceBatch or a "
                    + "purgeInstanceFilter");
        }
    }

    void signal(SignalEntityRequest r) throws StatusException {
        fields.requireId("instanceId", r.getInstanceId());
        fields.requireName("name", r.getName());
        fields.optionalName("requestId", r.getRequestId());
        timestamp("scheduledTime", r.hasScheduledTime(), r.getScheduledTime());
    }

    void query(EntityQuery q) throws StatusException {
        optionalId("query.instanceIdStartsWith", q.hasInstanceIdStartsWith(), q.getInstanceIdStartsWith());
        optionalId("query.continuationToken", q.hasContinuationToken(), q.getContinuationToken());
        timestamp("query.lastModifiedFrom", q.hasLastModifiedFrom(), q.getLastModifiedFrom());
        timestamp("query.lastModifiedTo", q.hasLastModifiedTo(), q.getLastModifiedTo());
    }

    void clean(CleanEntityStorageRequest r) throws StatusException {
        optionalId("continuationToken", r.hasContinuationToken(), r.getContinuationToken());
    }

    private void optionalId(String field, boolean present, StringValue value) throws StatusException {
        if (present) {
            fields.optionalId(field, value.getValue());
        }
    }

    private static void timestamp(String field, boolean present, Timestamp value) throws StatusException {
        if (present) {
            FieldRules.timestamp(field, value);
        }
    }
}
