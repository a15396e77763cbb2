package io.pgdurable.spi;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The storage contract a durable-workflow runtime drives: history, the orchestrator queue (instance-locked turns,
 * committed atomically) and the worker queue (leased activities). Thread-safe; every method throws
 * {@link ProviderException} and, except the two fetches, returns promptly.
 *
 * <p>Timing: {@code pollTimeout} bounds how long a fetch may wait for work; {@link Duration#ZERO} never waits.
 * A fetch that returns an item holds its lock; a fetch that throws holds none.
 */
public interface OrchestrationProvider extends AutoCloseable {

    default String name() {
        return "unknown";
    }

    default String version() {
        return "0.0.0";
    }

    // ---------------------------------------------------------------- orchestrator queue

    /**
     * Locks one instance with visible messages and returns all of them with its current history.
     *
     * @param filter null = no version filtering; otherwise only instances whose current execution is unpinned or
     *               pinned within the first range are considered (before anything is locked)
     */
    Optional<FetchedOrchestration> fetchOrchestrationItem(Duration lockTimeout, Duration pollTimeout,
                                                          DispatcherCapabilityFilter filter);

    /** Commits a turn atomically: history delta, new messages for both queues, metadata, cancellations. */
    void ackOrchestrationItem(String lockToken, long executionId, List<Event> historyDelta,
                              List<WorkItem> workerItems, List<WorkItem> orchestratorItems,
                              ExecutionMetadata metadata, List<ScheduledActivityIdentifier> cancelledActivities);

    /** Releases a turn without committing; its messages become visible again after {@code delay} (null = now). */
    void abandonOrchestrationItem(String lockToken, Duration delay, boolean ignoreAttempt);

    void renewOrchestrationItemLock(String lockToken, Duration extendFor);

    /** Enqueues a message for its routing instance; never creates the instance. {@code delay} may be null. */
    void enqueueForOrchestrator(WorkItem item, Duration delay);

    // ---------------------------------------------------------------- history

    /** Events of the latest execution ordered by event id; empty for an unknown instance. */
    List<Event> read(String instance);

    List<Event> readWithExecution(String instance, long executionId);

    /** Appends events verbatim; existing event ids are kept unchanged. */
    void appendWithExecution(String instance, long executionId, List<Event> newEvents);

    // ---------------------------------------------------------------- worker queue

    void enqueueForWorker(WorkItem item);

    /**
     * Leases one activity.
     *
     * @param session null = only items without a session; otherwise also items of sessions this owner holds or
     *                that nobody holds
     */
    Optional<FetchedWorkItem> fetchWorkItem(Duration lockTimeout, Duration pollTimeout, SessionFetchConfig session,
                                            TagFilter tagFilter);

    /** Deletes the leased item and, when {@code completion} is given, enqueues it for the orchestrator. */
    void ackWorkItem(String lockToken, WorkItem completion);

    void renewWorkItemLock(String lockToken, Duration extendFor);

    void abandonWorkItem(String lockToken, Duration delay, boolean ignoreAttempt);

    // ---------------------------------------------------------------- sessions

    int renewSessionLock(List<String> ownerIds, Duration extendFor, Duration idleTimeout);

    int cleanupOrphanedSessions(Duration idleTimeout);

    // ---------------------------------------------------------------- client reads

    /** The custom status when its version is above {@code lastSeenVersion}. */
    Optional<CustomStatus> getCustomStatus(String instance, long lastSeenVersion);

    Optional<String> getKvValue(String instance, String key);

    Map<String, String> getKvAllValues(String instance);

    Optional<SystemStats> getInstanceStats(String instance);

    default Optional<ProviderAdmin> asManagementCapability() {
        return Optional.empty();
    }

    /** Releases pools and background threads; returns promptly. */
    @Override
    void close();
}
