package io.pgdurable.postgres;

/**
 * Every SQL statement the provider sends, in one place. Each calls one function of the schema (see
 * {@code migrations/}), so an operation is one round trip and one transaction. The schema name is the only text
 * spliced in, validated and quoted; every value is a bind parameter.
 */
final class Statements {
    final String fetchOrchestrationItem;
    final String ackOrchestrationItem;
    final String abandonOrchestrationItem;
    final String renewOrchestrationItemLock;
    final String enqueueOrchestratorItem;
    final String enqueueWorkerItem;
    final String fetchWorkItem;
    final String ackWorkItem;
    final String renewWorkItemLock;
    final String abandonWorkItem;
    final String renewSessionLocks;
    final String cleanupOrphanedSessions;
    final String readHistory;
    final String appendHistory;
    final String getCustomStatus;
    final String getKvValues;
    final String getInstanceStats;
    final String listInstances;
    final String listExecutions;
    final String getInstanceInfo;
    final String getExecutionInfo;
    final String getSystemMetrics;
    final String getQueueDepths;
    final String listChildren;
    final String getParentId;
    final String deleteInstancesAtomic;
    final String selectDeletableRoots;
    final String selectPrunableInstances;
    final String pruneExecutions;
    final String fetchWorkItems;
    final String ackWorkItems;
    final String enqueueWorkerItems;
    final String enqueueOrchestratorItems;
    final String claimableNow;
    final String nextDeadlines;
    /** Every payload of one announcement batch, in one short transaction (the channel is a value, not SQL). */
    final String announce = "SELECT count(pg_notify(?, p)) FROM unnest(?::text[]) AS p";
    /** Both timeouts for the rest of the transaction only (the {@code SET LOCAL} of a scan), in one statement. */
    final String setLocalScanTimeouts = "SELECT set_config('lock_timeout', ?, true), "
            + "set_config('statement_timeout', ?, true)";

    Statements(String schema) {
        String s = Identifiers.quote(schema) + ".";
        fetchOrchestrationItem = "SELECT * FROM " + s + "fetch_orchestration_item(?, ?, ?, ?, ?)";
        ackOrchestrationItem = "SELECT " + s + "ack_orchestration_turn(" + params(31) + ")";
        abandonOrchestrationItem = "SELECT " + s + "abandon_orchestration_item(?, ?, ?, ?)";
        renewOrchestrationItemLock = "SELECT " + s + "renew_orchestration_item_lock(?, ?, ?)";
        enqueueOrchestratorItem = "SELECT " + s + "enqueue_orchestrator_item(?, ?, ?, ?, ?)";
        enqueueWorkerItem = "SELECT " + s + "enqueue_worker_item(?, ?, ?, ?, ?, ?, ?)";
        fetchWorkItem = "SELECT * FROM " + s + "fetch_work_item(?, ?, ?, ?, ?, ?, ?)";
        ackWorkItem = "SELECT " + s + "ack_work_item(?, ?, ?, ?, ?)";
        renewWorkItemLock = "SELECT " + s + "renew_work_item_lock(?, ?, ?)";
        abandonWorkItem = "SELECT " + s + "abandon_work_item(?, ?, ?, ?)";
        renewSessionLocks = "SELECT " + s + "renew_session_locks(?, ?, ?, ?)";
        cleanupOrphanedSessions = "SELECT " + s + "cleanup_orphaned_sessions(?)";
        readHistory = "SELECT * FROM " + s + "read_history(?, ?)";
        appendHistory = "SELECT " + s + "append_history(?, ?, ?, ?, ?, ?)";
        getCustomStatus = "SELECT * FROM " + s + "get_custom_status(?, ?)";
        getKvValues = "SELECT * FROM " + s + "get_kv_values(?, ?)";
        getInstanceStats = "SELECT * FROM " + s + "get_instance_stats(?)";
        listInstances = "SELECT * FROM " + s + "list_instances(?)";
        listExecutions = "SELECT * FROM " + s + "list_executions(?)";
        getInstanceInfo = "SELECT * FROM " + s + "get_instance_info(?)";
        getExecutionInfo = "SELECT * FROM " + s + "get_execution_info(?, ?)";
        getSystemMetrics = "SELECT * FROM " + s + "get_system_metrics()";
        getQueueDepths = "SELECT * FROM " + s + "get_queue_depths(?)";
        listChildren = "SELECT * FROM " + s + "list_children(?)";
        getParentId = "SELECT " + s + "get_parent_id(?)";
        deleteInstancesAtomic = "SELECT * FROM " + s + "delete_instances_atomic(?, ?)";
        selectDeletableRoots = "SELECT * FROM " + s + "select_deletable_roots(?, ?, ?)";
        selectPrunableInstances = "SELECT * FROM " + s + "select_prunable_instances(?, ?, ?)";
        pruneExecutions = "SELECT * FROM " + s + "prune_executions(?, ?, ?)";
        fetchWorkItems = "SELECT * FROM " + s + "fetch_work_items(" + params(10) + ")";
        ackWorkItems = "SELECT * FROM " + s + "ack_work_items(?, ?, ?, ?, ?)";
        enqueueWorkerItems = "SELECT " + s + "enqueue_worker_items(?, ?, ?, ?, ?, ?, ?)";
        enqueueOrchestratorItems = "SELECT " + s + "enqueue_orchestrator_items(?, ?, ?, ?, ?)";
        claimableNow = "SELECT * FROM " + s + "claimable_now(?)";
        nextDeadlines = "SELECT * FROM " + s + "next_deadlines(?, ?)";
    }

    private static String params(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "?" : ", ?");
        }
        return sb.toString();
    }
}
