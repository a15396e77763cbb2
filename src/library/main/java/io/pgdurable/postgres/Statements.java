package io.pgdurable.postgres;

/**
 * Every SQL statement the provider sends, in one place. Each calls one function of the schema (see
 * {@code migrations/}), so an operation is one round trip and one transaction. The schema name is the only text
 * spliced in, validated and quoted; every value is a bind parameter.
 *
 * <p>Every statement that writes a queue table passes its time argument through {@code provider_write(now)}, which
 * marks the transaction for the schema's notify triggers before the function body runs:
 * the triggers skip a provider's writes, which the provider announces itself after the commit. Claims pass it through
 * {@code provider_claim} instead, which also commits the claim without waiting for its WAL flush: a
 * claim is a lease, and one lost in a server crash is a lease that ended early (the work is claimable again, the
 * holder's ack fails on its token). The flush wait is about half of a claim's time (docs/decisions.md).
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
    final String ackAndFetchWorkItem;
    /** The same writes with their announcement's NOTIFY in the same statement (two more parameters, see notifying()). */
    final String enqueueWorkerItemNotifying;
    final String enqueueOrchestratorItemNotifying;
    final String ackWorkItemNotifying;
    final String ackOrchestrationItemNotifying;
    /** The writes of a hand-over: the item, or some of the turn's items, leased to parked fetches of ours. */
    final String enqueueWorkerItemLeased;
    final String ackOrchestrationItemHandingOver;
    /**
     * An orchestrator message written (enqueued, or an activity's completion acked) and its instance claimed for a
     * parked fetch of ours, in one statement. The claim's token, lock time and version range are the last four
     * parameters.
     */
    final String enqueueOrchestratorItemClaiming;
    final String ackWorkItemClaiming;
    /**
     * Hand-over across processes: an enqueue offered to another process's parked fetch first (origin, token,
     * channel and inline payloads last), and the parked process's account of its takers.
     */
    final String enqueueWorkerItemOffered;
    final String holdHandedOverItems;
    final String registerParkedFetches;
    final String unregisterParkedFetches;
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
    final String listInstancesAfter;
    final String listExecutions;
    final String getInstanceInfo;
    final String getExecutionInfo;
    final String getSystemMetrics;
    final String getQueueDepths;
    final String listChildren;
    final String getParentId;
    final String deleteInstancesAtomic;
    final String deleteInstancesKeepingChildren;
    final String selectDeletableRoots;
    final String selectPrunableInstances;
    final String pruneExecutions;
    final String fetchWorkItems;
    final String ackWorkItems;
    final String enqueueWorkerItems;
    final String enqueueOrchestratorItems;
    final String claimableNow;
    final String nextDeadlines;
    /** The health check's question: does the database answer at all. */
    final String ping = "SELECT 1";
    /**
     * Every payload of one announcement batch, in one short transaction (the channel is a value, not SQL) that commits
     * without waiting for its WAL flush: notifications are not durable in any case, the writes that record work were
     * flushed before they were announced, and a claim's lease end is soft state a crash may lose anyway (claims commit
     * asynchronously). A NOTIFY gives its transaction an id, so a synchronous commit
     * would wait for a flush of its own before the listeners are signalled (docs/decisions.md, "announcements commit
     * asynchronously").
     */
    final String announce = "SELECT count(pg_notify(?, p)) FROM unnest(?::text[]) AS p, "
            + "set_config('synchronous_commit', 'off', true)";
    /**
     * Whether a session other than the given listener's holds the channel's shared listener lock in this database
     * (keys from {@code NotifyChannel.listenerLockKeys}; the two-key form shows as {@code objsubid} 2).
     */
    final String otherListeners = "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
            + "AND classid = ?::bigint::oid AND objid = ?::bigint::oid AND granted AND pid <> ? "
            + "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))";
    /** Both timeouts for the rest of the transaction only (the {@code SET LOCAL} of a scan), in one statement. */
    final String setLocalScanTimeouts = "SELECT set_config('lock_timeout', ?, true), "
            + "set_config('statement_timeout', ?, true)";

    Statements(String schema) {
        String s = Identifiers.quote(schema) + ".";
        String mark = s + "provider_write(?)";
        String claimMark = s + "provider_claim(?)";
        fetchOrchestrationItem = "SELECT * FROM " + s + "fetch_orchestration_item(" + marked(6, 1, claimMark) + ")";
        ackOrchestrationItem = "SELECT " + s + "ack_orchestration_turn(" + marked(31, 2, mark) + ")";
        abandonOrchestrationItem = "SELECT " + s + "abandon_orchestration_item(" + marked(4, 2, mark) + ")";
        renewOrchestrationItemLock = "SELECT " + s + "renew_orchestration_item_lock(" + marked(3, 2, mark) + ")";
        enqueueOrchestratorItem = "SELECT " + s + "enqueue_orchestrator_item(" + marked(5, 5, mark) + ")";
        enqueueWorkerItem = "SELECT " + s + "enqueue_worker_item(" + marked(7, 2, mark) + ")";
        enqueueWorkerItemLeased = "SELECT " + s + "enqueue_worker_item_leased(" + marked(9, 2, mark) + ")";
        ackOrchestrationItemHandingOver = "SELECT * FROM " + s + "ack_orchestration_turn_handing_over("
                + marked(33, 2, mark) + ")";
        enqueueOrchestratorItemClaiming = "SELECT * FROM " + s + "enqueue_orchestrator_item_claiming("
                + marked(9, 5, mark) + ")";
        ackWorkItemClaiming = "SELECT * FROM " + s + "ack_work_item_claiming(" + marked(9, 2, mark) + ")";
        enqueueWorkerItemOffered = "SELECT " + s + "enqueue_worker_item_offered(" + marked(12, 2, mark) + ")";
        holdHandedOverItems = "SELECT " + s + "hold_handed_over_items(?, ?, ?)";
        registerParkedFetches = "SELECT " + s + "register_parked_fetches(?, ?, ?, ?, ?)";
        unregisterParkedFetches = "SELECT " + s + "unregister_parked_fetches(?)";
        fetchWorkItem = "SELECT * FROM " + s + "fetch_work_item(" + marked(7, 1, claimMark) + ")";
        ackWorkItem = "SELECT " + s + "ack_work_item(" + marked(5, 2, mark) + ")";
        ackAndFetchWorkItem = "SELECT * FROM " + s + "ack_and_fetch_work_item(" + marked(11, 2, mark) + ")";
        renewWorkItemLock = "SELECT " + s + "renew_work_item_lock(" + marked(3, 2, mark) + ")";
        abandonWorkItem = "SELECT " + s + "abandon_work_item(" + marked(4, 2, mark) + ")";
        renewSessionLocks = "SELECT " + s + "renew_session_locks(" + marked(4, 2, mark) + ")";
        cleanupOrphanedSessions = "SELECT " + s + "cleanup_orphaned_sessions(?)";
        readHistory = "SELECT * FROM " + s + "read_history(?, ?)";
        appendHistory = "SELECT " + s + "append_history(?, ?, ?, ?, ?, ?)";
        getCustomStatus = "SELECT * FROM " + s + "get_custom_status(?, ?)";
        getKvValues = "SELECT * FROM " + s + "get_kv_values(?, ?)";
        getInstanceStats = "SELECT * FROM " + s + "get_instance_stats(?)";
        listInstances = "SELECT * FROM " + s + "list_instances(?)";
        listInstancesAfter = "SELECT * FROM " + s + "list_instances_after(?, ?, ?)";
        listExecutions = "SELECT * FROM " + s + "list_executions(?)";
        getInstanceInfo = "SELECT * FROM " + s + "get_instance_info(?)";
        getExecutionInfo = "SELECT * FROM " + s + "get_execution_info(?, ?)";
        getSystemMetrics = "SELECT * FROM " + s + "get_system_metrics()";
        getQueueDepths = "SELECT * FROM " + s + "get_queue_depths(?)";
        listChildren = "SELECT * FROM " + s + "list_children(?)";
        getParentId = "SELECT " + s + "get_parent_id(?)";
        deleteInstancesAtomic = "SELECT * FROM " + s + "delete_instances_atomic(" + marked(2, 2, mark) + ")";
        deleteInstancesKeepingChildren = "SELECT * FROM " + s + "delete_instances_keeping_children("
                + marked(2, 2, mark) + ")";
        selectDeletableRoots = "SELECT * FROM " + s + "select_deletable_roots(?, ?, ?)";
        selectPrunableInstances = "SELECT * FROM " + s + "select_prunable_instances(?, ?, ?)";
        pruneExecutions = "SELECT * FROM " + s + "prune_executions(?, ?, ?)";
        fetchWorkItems = "SELECT * FROM " + s + "fetch_work_items(" + marked(10, 1, claimMark) + ")";
        ackWorkItems = "SELECT * FROM " + s + "ack_work_items(" + marked(5, 2, mark) + ")";
        enqueueWorkerItems = "SELECT " + s + "enqueue_worker_items(" + marked(7, 2, mark) + ")";
        enqueueOrchestratorItems = "SELECT " + s + "enqueue_orchestrator_items(" + marked(5, 5, mark) + ")";
        claimableNow = "SELECT * FROM " + s + "claimable_now(?)";
        enqueueWorkerItemNotifying = notifying(enqueueWorkerItem);
        enqueueOrchestratorItemNotifying = notifying(enqueueOrchestratorItem);
        ackWorkItemNotifying = notifying(ackWorkItem);
        ackOrchestrationItemNotifying = notifying(ackOrchestrationItem);
        nextDeadlines = "SELECT * FROM " + s + "next_deadlines(?, ?)";
    }

    /**
     * A single-row {@code SELECT f(...)} that also queues the NOTIFY of its announcement, delivered at its commit:
     * the channel and the payloads are its last two parameters (values, not SQL).
     */
    private static String notifying(String select) {
        return select + ", (SELECT count(pg_notify(?, p)) FROM unnest(?::text[]) AS p)";
    }

    /** {@code n} parameters, the one at {@code position} (1-based, the time) passed through the write mark. */
    private static String marked(int n, int position, String mark) {
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= n; i++) {
            sb.append(i == 1 ? "" : ", ").append(i == position ? mark : "?");
        }
        return sb.toString();
    }
}
