package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code cancellation} (CONTRACT §7.11, §4.2): the worker queue does not consult orchestration
 * state (activities of finished or missing instances stay fetchable and renewable), an orchestration ack deletes the
 * activities it lists as cancelled (after inserting its own worker items), and a worker whose row was deleted learns
 * it through a permanent renew or ack failure.
 */
public abstract class CancellationTests extends ConformanceTestBase {

    // ------------------------------------------------------------------ module helpers

    /** The admin facet; the cancellation module needs it to observe instance state and to force-delete. */
    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> a = p.asManagementCapability();
        assertTrue(a != null && a.isPresent(), "the provider must expose its management capability");
        return a.orElseThrow();
    }

    protected static ScheduledActivityIdentifier activityRef(String instance, long activityId) {
        return new ScheduledActivityIdentifier(instance, 1, activityId);
    }

    /**
     * Starts {@code instance} in one turn that writes {@code delta}, schedules {@code activities}, sets
     * {@code status} (with {@code output}) and creates the instance row as "TestOrch" 1.0.0.
     */
    protected static void startWithActivities(OrchestrationProvider p, String instance, List<Event> delta,
                                              List<WorkItem> activities, String status, String output) {
        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start of " + instance);
        assertEquals(instance, f.item().instance());
        p.ackOrchestrationItem(f.lockToken(), 1, delta, activities, List.of(),
                testOrchMetadata().withStatus(status, output), List.of());
    }

    /** Runs one more turn of {@code instance} (nudged by an ExternalRaised) that only cancels {@code cancelled}. */
    protected static void cancelInNextTurn(OrchestrationProvider p, String instance,
                                           List<ScheduledActivityIdentifier> cancelled) {
        p.enqueueForOrchestrator(new WorkItem.ExternalRaised(instance, "Trigger", "{}"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the trigger turn of " + instance);
        assertEquals(instance, f.item().instance());
        p.ackOrchestrationItem(f.lockToken(), 1, List.of(), List.of(), List.of(), ExecutionMetadata.empty(),
                cancelled);
    }

    /** Fetches the single queued activity, checks it is {@code expected}, and returns the lease. */
    protected static FetchedWorkItem fetchExpectedActivity(OrchestrationProvider p, WorkItem.ActivityExecute expected,
                                                           String why) {
        FetchedWorkItem w = fetchWorkRequired(p, why);
        assertEquals(expected, asActivity(w), "the fetched activity is the scheduled one, unchanged");
        assertTrue(w.attemptCount() >= 1, "attempt count of a fetched item is at least 1");
        return w;
    }

    /** Fetches activities until the queue is empty and returns their ids in fetch order. */
    protected static List<Long> drainActivityIds(OrchestrationProvider p) {
        List<Long> ids = new ArrayList<>();
        Optional<FetchedWorkItem> w;
        while ((w = fetchWork(p)).isPresent()) {
            ids.add(asActivity(w.get()).id());
            assertTrue(ids.size() <= 100, "the worker queue does not drain: " + ids);
        }
        return ids;
    }

    // ------------------------------------------------------------------ fetch ignores orchestration state

    /** An activity scheduled by a running orchestration is fetchable. */
    @Test
    void test_fetch_returns_running_state_for_active_orchestration() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-running";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1)), List.of(a), ExecutionMetadata.RUNNING, null);
        assertEquals(ExecutionMetadata.RUNNING, admin(p).getInstanceInfo(instance).status());

        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity of a running orchestration");
        assertEquals(1, w.attemptCount(), "first delivery");
        p.ackWorkItem(w.lockToken(), activityCompleted(instance, 1, "ok"));
        assertNoWorkItem(p, "the acked activity is gone");
    }

    /** An activity scheduled in the turn that completed its orchestration is still fetchable. */
    @Test
    void test_fetch_returns_terminal_state_when_orchestration_completed() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-completed";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1), Events.orchestrationCompleted(2, "done")),
                List.of(a), ExecutionMetadata.COMPLETED, "done");
        assertEquals(ExecutionMetadata.COMPLETED, admin(p).getInstanceInfo(instance).status(),
                "the orchestration is completed");

        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity of a completed orchestration");
        p.ackWorkItem(w.lockToken(), null);
    }

    /** An activity scheduled in the turn that failed its orchestration is still fetchable. */
    @Test
    void test_fetch_returns_terminal_state_when_orchestration_failed() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-failed";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1), Events.orchestrationFailed(2, "boom")),
                List.of(a), ExecutionMetadata.FAILED, "boom");
        assertEquals(ExecutionMetadata.FAILED, admin(p).getInstanceInfo(instance).status(),
                "the orchestration is failed");

        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity of a failed orchestration");
        p.ackWorkItem(w.lockToken(), null);
    }

    /** An activity scheduled in the turn that continued its execution as new is still fetchable. */
    @Test
    void test_fetch_returns_terminal_state_when_orchestration_continued_as_new() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-can";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance,
                List.of(startedEvent(1), Events.orchestrationContinuedAsNew(2, "new-input")),
                List.of(a), ExecutionMetadata.CONTINUED_AS_NEW, "new-input");
        assertEquals(ExecutionMetadata.CONTINUED_AS_NEW, admin(p).getInstanceInfo(instance).status(),
                "execution 1 ended with ContinuedAsNew");

        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity of a continued-as-new execution");
        p.ackWorkItem(w.lockToken(), null);
    }

    /** An activity whose instance does not exist is fetchable. */
    @Test
    void test_fetch_returns_missing_state_when_instance_deleted() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-missing";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        p.enqueueForWorker(a);
        expectPermanentError("getInstanceInfo of an instance that never existed",
                () -> admin(p).getInstanceInfo(instance));

        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity of a missing instance");
        assertEquals(1, w.attemptCount(), "first delivery");
        p.ackWorkItem(w.lockToken(), null);
        assertNoWorkItem(p, "the acked activity is gone");
    }

    // ------------------------------------------------------------------ renew ignores orchestration state

    /** Renewing the lease of a running orchestration's activity succeeds and keeps the token usable. */
    @Test
    void test_renew_returns_running_when_orchestration_active() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-renew-run";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1)), List.of(a), ExecutionMetadata.RUNNING, null);

        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity");
        p.renewWorkItemLock(w.lockToken(), LONG_LOCK);
        assertNoWorkItem(p, "the renewed item stays leased");
        p.ackWorkItem(w.lockToken(), activityCompleted(instance, 1, "ok"));
        assertNoWorkItem(p, "the acked item is gone");
    }

    /** Renewing still succeeds after a later turn completed the orchestration. */
    @Test
    void test_renew_returns_terminal_when_orchestration_completed() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-renew-term";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1)), List.of(a), ExecutionMetadata.RUNNING, null);
        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity");

        p.enqueueForOrchestrator(new WorkItem.ExternalRaised(instance, "Trigger", "{}"), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the trigger turn");
        p.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.orchestrationCompleted(2, "done")), List.of(),
                List.of(), ExecutionMetadata.empty().withStatus(ExecutionMetadata.COMPLETED, "done"), List.of());
        assertEquals(ExecutionMetadata.COMPLETED, admin(p).getInstanceInfo(instance).status(),
                "the orchestration completed in the second turn");

        p.renewWorkItemLock(w.lockToken(), LONG_LOCK);
        assertNoWorkItem(p, "the renewed item stays leased");
        p.ackWorkItem(w.lockToken(), null);
    }

    /** Renewing succeeds for an activity whose instance does not exist. */
    @Test
    void test_renew_returns_missing_when_instance_deleted() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-renew-missing";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        p.enqueueForWorker(a);
        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity of a missing instance");

        p.renewWorkItemLock(w.lockToken(), LONG_LOCK);
        assertNoWorkItem(p, "the renewed item stays leased");
        p.ackWorkItem(w.lockToken(), null);
        assertNoWorkItem(p, "the acked item is gone");
    }

    // ------------------------------------------------------------------ ack without completion

    /** ack(token, null) deletes the item and enqueues nothing for the orchestrator. */
    @Test
    void test_ack_work_item_none_deletes_without_enqueue() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-ack-none";
        // An existing instance: a completion enqueued by mistake would certainly be fetchable.
        createInstance(p, instance);
        assertNoOrchItem(p, "the start was consumed");

        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        p.enqueueForWorker(a);
        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity");
        p.ackWorkItem(w.lockToken(), null);

        assertNoWorkItem(p, "the item was deleted");
        assertNoOrchItem(p, "no completion was enqueued");
        ProviderAdmin.QueueDepths depths = admin(p).getQueueDepths();
        assertEquals(0, depths.workerQueue(), "worker queue depth after ack(null)");
        assertEquals(0, depths.orchestratorQueue(), "orchestrator queue depth after ack(null)");
    }

    // ------------------------------------------------------------------ lock stealing

    /** Cancelling activities 1 and 2 of three leaves only activity 3. */
    @Test
    void test_cancelled_activities_deleted_from_worker_queue() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-cancel-delete";
        startWithActivities(p, instance, List.of(startedEvent(1)),
                List.of(activity(instance, 1, "Activity1", "{}"), activity(instance, 2, "Activity2", "{}"),
                        activity(instance, 3, "Activity3", "{}")),
                ExecutionMetadata.RUNNING, null);

        FetchedWorkItem first = fetchWorkRequired(p, "the first scheduled activity");
        assertEquals(1, asActivity(first).id(), "FIFO");
        p.abandonWorkItem(first.lockToken(), null, false);

        cancelInNextTurn(p, instance, List.of(activityRef(instance, 1), activityRef(instance, 2)));

        assertEquals(List.of(3L), drainActivityIds(p), "only the activity that was not cancelled remains");
    }

    /** A worker whose item was cancelled cannot ack it; the error is permanent and no completion is enqueued. */
    @Test
    void test_ack_work_item_fails_when_entry_deleted() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-ack-stolen";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1)), List.of(a), ExecutionMetadata.RUNNING, null);
        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity");

        cancelInNextTurn(p, instance, List.of(activityRef(instance, 1)));

        expectPermanentError("acking a cancelled (deleted) work item",
                () -> p.ackWorkItem(w.lockToken(), activityCompleted(instance, 1, "done")));
        assertNoOrchItem(p, "the rejected ack enqueued no completion");
        assertNoWorkItem(p, "the cancelled item is gone");

        // The same holds when the row went away through the worker's own ack(null).
        p.enqueueForWorker(activity(instance, 2, "Other", "{}"));
        FetchedWorkItem w2 = fetchWorkRequired(p, "the second activity");
        p.ackWorkItem(w2.lockToken(), null);
        expectPermanentError("acking an already deleted work item",
                () -> p.ackWorkItem(w2.lockToken(), activityCompleted(instance, 2, "done")));
        assertNoOrchItem(p, "the second rejected ack enqueued no completion");
    }

    /** Renewing fails permanently once the item was cancelled: that is the worker's cancellation signal. */
    @Test
    void test_renew_fails_when_entry_deleted() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-renew-stolen";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "{}");
        startWithActivities(p, instance, List.of(startedEvent(1)), List.of(a), ExecutionMetadata.RUNNING, null);
        FetchedWorkItem w = fetchExpectedActivity(p, a, "the activity");
        p.renewWorkItemLock(w.lockToken(), LONG_LOCK);

        cancelInNextTurn(p, instance, List.of(activityRef(instance, 1)));

        expectPermanentError("renewing a cancelled (deleted) work item",
                () -> p.renewWorkItemLock(w.lockToken(), LONG_LOCK));
        expectPermanentError("renewing it again", () -> p.renewWorkItemLock(w.lockToken(), LONG_LOCK));
    }

    /** Cancelling activities that are not queued is a no-op and touches no other activity. */
    @Test
    void test_cancelling_nonexistent_activities_is_idempotent() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-cancel-idempotent";
        // Activities that share part of the identity of the cancelled ones but are different activities.
        WorkItem.ActivityExecute otherInstance = activity("inst-other", 1, "OtherInstance", "{}");
        WorkItem.ActivityExecute otherExecution =
                new WorkItem.ActivityExecute(instance, 2, 1, "OtherExecution", "{}");
        p.enqueueForWorker(otherInstance);
        p.enqueueForWorker(otherExecution);

        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        p.ackOrchestrationItem(f.lockToken(), 1, List.of(startedEvent(1)), List.of(), List.of(),
                testOrchMetadata(), List.of(activityRef(instance, 999), activityRef(instance, 1)));

        assertEquals(1, p.read(instance).size(), "the ack that cancelled unknown activities was committed");
        assertNoOrchItem(p, "the start was consumed by the ack");
        FetchedWorkItem w1 = fetchWorkRequired(p, "the other instance's activity");
        assertEquals(otherInstance, asActivity(w1), "an activity of another instance is not cancelled");
        FetchedWorkItem w2 = fetchWorkRequired(p, "the other execution's activity");
        assertEquals(otherExecution, asActivity(w2), "an activity of another execution is not cancelled");
        assertNoWorkItem(p, "nothing else was queued");
    }

    /** Cancelling all five activities in one ack empties the worker queue. */
    @Test
    void test_batch_cancellation_deletes_multiple_activities() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-batch-cancel";
        List<WorkItem> activities = new ArrayList<>();
        List<ScheduledActivityIdentifier> refs = new ArrayList<>();
        for (long i = 1; i <= 5; i++) {
            activities.add(activity(instance, i, "Activity" + i, "{}"));
            refs.add(activityRef(instance, i));
        }
        startWithActivities(p, instance, List.of(startedEvent(1)), activities, ExecutionMetadata.RUNNING, null);
        assertEquals(5, admin(p).getQueueDepths().workerQueue(), "five activities were scheduled");

        cancelInNextTurn(p, instance, refs);

        assertNoWorkItem(p, "all five activities were cancelled");
        assertEquals(0, admin(p).getQueueDepths().workerQueue(), "worker queue depth after the batch cancellation");
    }

    /** An activity scheduled and cancelled in the same ack ends up absent; its sibling stays. */
    @Test
    void test_same_activity_in_worker_items_and_cancelled_is_noop() {
        OrchestrationProvider p = newProvider();
        String instance = "inst-schedule-then-cancel";
        WorkItem.ActivityExecute dropped = activity(instance, 2, "DroppedActivity", "{}");
        WorkItem.ActivityExecute normal = activity(instance, 3, "NormalActivity", "{}");

        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        p.ackOrchestrationItem(f.lockToken(), 1, List.of(startedEvent(1)), List.of(dropped, normal), List.of(),
                testOrchMetadata().withStatus(ExecutionMetadata.RUNNING, null), List.of(activityRef(instance, 2)));

        FetchedWorkItem w = fetchWorkRequired(p, "the activity that was not cancelled");
        assertEquals(normal, asActivity(w), "only the normal activity remains");
        p.ackWorkItem(w.lockToken(), null);
        assertNoWorkItem(p, "the scheduled-then-cancelled activity is not queued");
    }

    /** Force-deleting a running instance with a queued activity works; what remains of it is harmless. */
    @Test
    void test_orphan_activity_after_instance_force_deletion() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String instance = "inst-orphan-activity";
        WorkItem.ActivityExecute a = activity(instance, 1, "TestActivity", "test-input");
        startWithActivities(p, instance, List.of(startedEvent(1)), List.of(a), ExecutionMetadata.RUNNING, null);
        assertEquals(ExecutionMetadata.RUNNING, admin.getInstanceInfo(instance).status());
        assertEquals(0, admin.getQueueDepths().orchestratorQueue(), "the start was consumed");

        ProviderAdmin.DeleteInstanceResult deleted = admin.deleteInstance(instance, true);
        assertEquals(1, deleted.instancesDeleted(), "force delete removes the running instance");
        assertEquals(1, deleted.executionsDeleted(), "its one execution");
        assertEquals(1, deleted.eventsDeleted(), "its one history event");
        expectPermanentError("getInstanceInfo after the force delete", () -> admin.getInstanceInfo(instance));
        assertTrue(p.read(instance).isEmpty(), "the history is gone");

        // The worker row may have been removed with the instance (then it was counted) or may survive it.
        Optional<FetchedWorkItem> survivor = fetchWork(p, Duration.ofSeconds(5));
        if (survivor.isPresent()) {
            assertEquals(0, deleted.queueMessagesDeleted(), "a surviving worker row was not counted as deleted");
            assertEquals(a, asActivity(survivor.get()), "the surviving row is the scheduled activity");
            p.ackWorkItem(survivor.get().lockToken(), activityCompleted(instance, 1, "orphan-result"));
            // The orphaned completion is harmless: fetching it neither fails nor recreates the instance.
            Optional<FetchedOrchestration> orphan = fetchOrch(p);
            if (orphan.isPresent()) {
                assertEquals(instance, orphan.get().item().instance());
                assertTrue(orphan.get().item().history().isEmpty(), "no history for a deleted instance");
                ackEmpty(p, orphan.get().lockToken(), orphan.get().item().executionId());
            }
            expectPermanentError("getInstanceInfo after the orphaned completion",
                    () -> admin.getInstanceInfo(instance));
        } else {
            assertEquals(1, deleted.queueMessagesDeleted(), "the removed worker row is counted as deleted");
            assertEquals(0, admin.getQueueDepths().workerQueue(), "no worker row is left");
        }
        assertFalse(admin.listInstances().contains(instance), "the deleted instance is not listed");
    }
}
