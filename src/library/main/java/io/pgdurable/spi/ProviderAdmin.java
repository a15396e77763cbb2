package io.pgdurable.spi;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** Management operations (cold path): listing, inspection, deletion and pruning. */
public interface ProviderAdmin {

    List<String> listInstances();

    List<String> listInstancesByStatus(String status);

    /**
     * One page of instance ids: at most {@code limit} ids that start with {@code prefix} and come after {@code after}
     * in the provider's order of instance ids, in that order. Listing from {@code ""} and then from the last id of
     * each page visits every instance that existed throughout, once. For management listings that page; unlike
     * {@link #listInstances()} a page costs the page, not the hub. This default reads the whole list and orders it
     * as Java's {@link String#compareTo} does; providers that can page in storage override it, and their order may
     * differ (PostgreSQL's is the database collation's).
     *
     * @throws ProviderException permanent, when an argument is null or {@code limit} is not positive
     */
    default List<String> listInstancesAfter(String after, String prefix, int limit) {
        String op = "listInstancesAfter";
        if (after == null || prefix == null) {
            throw ProviderException.permanent(op, (after == null ? "after" : "prefix") + " is null");
        }
        if (limit <= 0) {
            throw ProviderException.permanent(op, "limit must be positive, was " + limit);
        }
        return listInstances().stream()
                .filter(id -> id.startsWith(prefix) && id.compareTo(after) > 0)
                .sorted()
                .limit(limit)
                .toList();
    }

    List<Long> listExecutions(String instance);

    List<Event> readHistoryWithExecutionId(String instance, long executionId);

    List<Event> readHistory(String instance);

    long latestExecutionId(String instance);

    InstanceInfo getInstanceInfo(String instance);

    ExecutionInfo getExecutionInfo(String instance, long executionId);

    SystemMetrics getSystemMetrics();

    QueueDepths getQueueDepths();

    List<String> listChildren(String instanceId);

    Optional<String> getParentId(String instanceId);

    DeleteInstanceResult deleteInstancesAtomic(List<String> ids, boolean force);

    /**
     * Like {@link #deleteInstancesAtomic}, except that children of deleted instances that are not deleted
     * themselves are kept and become root instances (their parent link is cleared in the same transaction) instead
     * of failing the call. For runtimes whose purge leaves sub-orchestrations in place. Providers that cannot do it
     * keep this default, which refuses permanently.
     */
    default DeleteInstanceResult deleteInstancesKeepingChildren(List<String> ids, boolean force) {
        throw ProviderException.permanent("deleteInstancesKeepingChildren",
                getClass().getName() + " cannot delete an instance without its sub-orchestrations");
    }

    /** The instance and all its descendants, breadth first from the root. */
    default InstanceTree getInstanceTree(String rootId) {
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> pending = new ArrayDeque<>();
        pending.add(rootId);
        while (!pending.isEmpty()) {
            String id = pending.poll();
            if (seen.add(id)) {
                pending.addAll(listChildren(id));
            }
        }
        return new InstanceTree(rootId, new ArrayList<>(seen));
    }

    /** Deletes a root instance with its whole tree; a sub-orchestration cannot be deleted on its own. */
    default DeleteInstanceResult deleteInstance(String instanceId, boolean force) {
        Optional<String> parent = getParentId(instanceId);
        if (parent.isPresent()) {
            throw ProviderException.permanent("deleteInstance", "instance '" + instanceId
                    + "' is a sub-orchestration of '" + parent.get() + "'; delete its root parent instead");
        }
        return deleteInstancesAtomic(getInstanceTree(instanceId).allIds(), force);
    }

    DeleteInstanceResult deleteInstanceBulk(InstanceFilter filter);

    PruneResult pruneExecutions(String instanceId, PruneOptions options);

    PruneResult pruneExecutionsBulk(InstanceFilter filter, PruneOptions options);

    record InstanceInfo(String instanceId, String orchestrationName, String orchestrationVersion,
                        long currentExecutionId, String status, Optional<String> output, long createdAtMs,
                        long updatedAtMs, Optional<String> parentInstanceId) {}

    record ExecutionInfo(long executionId, String status, Optional<String> output, long startedAtMs,
                         Optional<Long> completedAtMs, int eventCount) {}

    record SystemMetrics(long totalInstances, long totalExecutions, long runningInstances, long completedInstances,
                         long failedInstances, long totalEvents) {}

    record QueueDepths(int orchestratorQueue, int workerQueue, int timerQueue) {}

    /** Which instances a bulk operation considers; {@code limit} defaults to {@value #DEFAULT_LIMIT}. */
    record InstanceFilter(Optional<List<String>> instanceIds, Optional<Long> completedBeforeMs,
                          Optional<Integer> limit) {
        public static final int DEFAULT_LIMIT = 1000;

        public static InstanceFilter all() {
            return new InstanceFilter(Optional.empty(), Optional.empty(), Optional.empty());
        }
    }

    record PruneOptions(Optional<Integer> keepLast, Optional<Long> completedBeforeMs) {}

    record DeleteInstanceResult(long instancesDeleted, long executionsDeleted, long eventsDeleted,
                                long queueMessagesDeleted) {
        public static final DeleteInstanceResult NONE = new DeleteInstanceResult(0, 0, 0, 0);

        public DeleteInstanceResult plus(DeleteInstanceResult o) {
            return new DeleteInstanceResult(instancesDeleted + o.instancesDeleted,
                    executionsDeleted + o.executionsDeleted, eventsDeleted + o.eventsDeleted,
                    queueMessagesDeleted + o.queueMessagesDeleted);
        }
    }

    record PruneResult(long instancesProcessed, long executionsDeleted, long eventsDeleted) {
        public PruneResult plus(PruneResult o) {
            return new PruneResult(instancesProcessed + o.instancesProcessed,
                    executionsDeleted + o.executionsDeleted, eventsDeleted + o.eventsDeleted);
        }
    }

    record InstanceTree(String rootId, List<String> allIds) {
        public InstanceTree {
            allIds = List.copyOf(allIds);
        }

        public boolean isRootOnly() {
            return allIds.size() == 1;
        }

        public int size() {
            return allIds.size();
        }
    }
}
