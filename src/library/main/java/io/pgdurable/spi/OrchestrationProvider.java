package io.pgdurable.spi;

import java.time.Duration;
import java.util.ArrayList;
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

    /**
     * Enqueues many orchestrator messages, in list order, each as {@link #enqueueForOrchestrator(WorkItem, Duration)}
     * would (the same {@code delay} for all; a {@code TimerFired} is never visible before its fire time). An empty
     * list does nothing.
     *
     * <p>Not atomic as a whole: when it fails part-way it throws {@link BatchEnqueueException}, which says which
     * items are stored and which are not. This default stores one item at a time; providers override it with
     * chunked statements. (Named {@code enqueueAll…} rather than overloading {@code enqueueForOrchestrator}, so that
     * a call with a {@code null} item stays unambiguous.)
     */
    default void enqueueAllForOrchestrator(List<WorkItem> items, Duration delay) {
        enqueueEach("enqueueAllForOrchestrator", items, item -> enqueueForOrchestrator(item, delay));
    }

    // ---------------------------------------------------------------- history

    /** Events of the latest execution ordered by event id; empty for an unknown instance. */
    List<Event> read(String instance);

    List<Event> readWithExecution(String instance, long executionId);

    /** Appends events verbatim; existing event ids are kept unchanged. */
    void appendWithExecution(String instance, long executionId, List<Event> newEvents);

    // ---------------------------------------------------------------- worker queue

    void enqueueForWorker(WorkItem item);

    /**
     * Enqueues many activities, in list order, each as {@link #enqueueForWorker(WorkItem)} would. An empty list does
     * nothing. Not atomic as a whole: a failure part-way throws {@link BatchEnqueueException}, which says which items
     * are stored and which are not. This default stores one item at a time; providers override it.
     */
    default void enqueueAllForWorker(List<WorkItem> items) {
        enqueueEach("enqueueAllForWorker", items, this::enqueueForWorker);
    }

    /**
     * Leases one activity.
     *
     * @param session null = only items without a session; otherwise also items of sessions this owner holds or
     *                that nobody holds
     */
    Optional<FetchedWorkItem> fetchWorkItem(Duration lockTimeout, Duration pollTimeout, SessionFetchConfig session,
                                            TagFilter tagFilter);

    /**
     * Leases up to {@code batch.maxItems()} activities, oldest first, under the same eligibility, tag and session
     * rules as {@link #fetchWorkItem}; each returned item has its own lock token. Returns as soon as at least
     * {@code batch.minItems()} are claimed or when {@code batch.maxWait()} ends (then possibly fewer, possibly none).
     * Items claimed early keep their leases while the fetch waits for more, so keep {@code lockTimeout} well above
     * {@code maxWait}.
     *
     * <p>This default claims one item at a time with {@link #fetchWorkItem}, waiting (as that method's
     * {@code pollTimeout}) only while fewer than {@code minItems} are held, and stops at the first empty fetch.
     * Should a fetch fail after some items were claimed, the items held are returned; a batch that holds nothing
     * rethrows, so a fetch that throws holds no lock.
     */
    default List<FetchedWorkItem> fetchWorkItems(Duration lockTimeout, WorkBatch batch, SessionFetchConfig session,
                                                 TagFilter tagFilter) {
        if (batch == null) {
            throw ProviderException.permanent("fetchWorkItems", "batch is null");
        }
        long deadline = System.nanoTime() + batch.maxWait().toNanos();
        List<FetchedWorkItem> out = new ArrayList<>();
        while (out.size() < batch.maxItems()) {
            long remaining = deadline - System.nanoTime();
            Duration wait = out.size() >= batch.minItems() || remaining <= 0 ? Duration.ZERO
                    : Duration.ofNanos(remaining);
            Optional<FetchedWorkItem> next;
            try {
                next = fetchWorkItem(lockTimeout, wait, session, tagFilter);
            } catch (ProviderException e) {
                if (out.isEmpty()) {
                    throw e;
                }
                break;
            }
            if (next.isEmpty()) {
                break;
            }
            out.add(next.get());
        }
        return out;
    }

    /** Deletes the leased item and, when {@code completion} is given, enqueues it for the orchestrator. */
    void ackWorkItem(String lockToken, WorkItem completion);

    /**
     * {@link #ackWorkItem} and then, only when the ack succeeded, {@link #fetchWorkItem} without waiting
     * ({@code pollTimeout} zero) under the given lease, session and tag rules: a worker that has just finished an
     * activity asks for its next one in the same call. The ack has exactly {@link #ackWorkItem}'s semantics; when it
     * throws, nothing was claimed. An empty result means nothing was claimable at that moment: call
     * {@link #fetchWorkItem} with a poll timeout to wait for more.
     *
     * <p>This default makes the two calls; a provider may do both in one round trip.
     */
    default Optional<FetchedWorkItem> ackWorkItemAndFetchNext(String lockToken, WorkItem completion,
                                                              Duration lockTimeout, SessionFetchConfig session,
                                                              TagFilter tagFilter) {
        ackWorkItem(lockToken, completion);
        return fetchWorkItem(lockTimeout, Duration.ZERO, session, tagFilter);
    }

    /**
     * Acks many leased items, each with exactly {@link #ackWorkItem}'s semantics, and returns one result per ack in
     * input order: an item whose ack fails on its own (an expired lease, an unknown or repeated token) does not stop
     * the others. The call throws only when it could not be done at all (then the results of what was already acked
     * are lost to the caller, as with a single ack whose reply was lost; such items are not acked twice: a repeated
     * ack fails). Argument errors (a null token, a completion of the wrong kind) are thrown before anything is acked.
     *
     * <p>This default acks one item at a time; a provider may ack all of them in one round trip.
     */
    default List<AckResult> ackWorkItems(List<WorkAck> acks) {
        if (acks == null) {
            throw ProviderException.permanent("ackWorkItems", "acks is null");
        }
        for (int i = 0; i < acks.size(); i++) {
            if (acks.get(i) == null || acks.get(i).lockToken() == null) {
                throw ProviderException.permanent("ackWorkItems", "ack " + i + " has no lock token");
            }
            WorkItem c = acks.get(i).completion();
            if (c != null && !(c instanceof WorkItem.ActivityCompleted || c instanceof WorkItem.ActivityFailed)) {
                throw ProviderException.permanent("ackWorkItems", "ack " + i + ": completion must be "
                        + "ActivityCompleted or ActivityFailed, was " + c.kind());
            }
        }
        List<AckResult> out = new ArrayList<>(acks.size());
        for (WorkAck a : acks) {
            try {
                ackWorkItem(a.lockToken(), a.completion());
                out.add(AckResult.acked(a.lockToken()));
            } catch (ProviderException e) {
                if (e.retryable()) {
                    throw e;
                }
                out.add(new AckResult(a.lockToken(), e));
            }
        }
        return out;
    }

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

    /** One item at a time, stopping at the first failure, which is reported with what was stored. */
    private static void enqueueEach(String op, List<WorkItem> items, java.util.function.Consumer<WorkItem> one) {
        if (items == null) {
            throw new BatchEnqueueException(op, "items is null", false, null, null, 0, 0, 0);
        }
        for (int i = 0; i < items.size(); i++) {
            try {
                one.accept(items.get(i));
            } catch (ProviderException e) {
                // A connection lost mid-statement leaves that one item's outcome unknown.
                int inDoubt = e.sqlState().filter(state -> state.startsWith("08")).isPresent() ? 1 : 0;
                throw new BatchEnqueueException(op, "item #" + i + " failed: " + e.getMessage(), e.retryable(),
                        e.sqlState().orElse(null), e, items.size(), i, inDoubt);
            }
        }
    }
}
