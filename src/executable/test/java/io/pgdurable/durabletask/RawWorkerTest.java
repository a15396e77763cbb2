package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.StringValue;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonActivityTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonOrchestrationTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ActivityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationSignaledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationState;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.ScheduleTaskAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEntityMessageAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc.TaskHubSidecarServiceBlockingStub;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A worker written against the current protocol classes, sending what no SDK in the suite sends on demand:
 * actions the sidecar cannot carry out, abandons by completion token.
 */
class RawWorkerTest {
    private static final Duration WAIT = RawStream.WAIT;

    private SidecarHarness hub;
    private RawStream worker;

    @BeforeEach
    void start() {
        // A long lease: a redelivery within the test's bounds can only come from the abandon, not from expiry.
        hub = new SidecarHarness("raw", io.pgdurable.postgres.TestDatabase.newSchemaName("raw"),
                c -> c.withLockTimeout(Duration.ofMinutes(5)));
        worker = new RawStream(hub.sidecar.port(), GetWorkItemsRequest.newBuilder()
                .setMaxConcurrentOrchestrationWorkItems(2).setMaxConcurrentActivityWorkItems(2).build());
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (worker != null) {
            worker.close();
        }
        if (hub != null) {
            hub.close();
        }
    }

    private TaskHubSidecarServiceBlockingStub timed() {
        return worker.timed();
    }

    private WorkItem next() throws InterruptedException {
        return worker.next();
    }

    private String startInstance(String id) {
        return timed().startInstance(CreateInstanceRequest.newBuilder().setName("Raw").setInstanceId(id)
                .setInput(StringValue.of("1")).build()).getInstanceId();
    }

    @Test
    void a_scheduled_entity_signal_fails_the_orchestration_naming_it() throws Exception {
        String id = startInstance("raw-entity");
        WorkItem item = next();
        assertTrue(item.hasOrchestratorRequest(), "got " + item.getRequestCase());
        assertTrue(!item.getCompletionToken().isEmpty(), "the item carries no completion token");
        OrchestratorRequest req = item.getOrchestratorRequest();
        timed().completeOrchestratorTask(OrchestratorResponse.newBuilder().setInstanceId(req.getInstanceId())
                .setCompletionToken(item.getCompletionToken())
                .addActions(OrchestratorAction.newBuilder().setId(0).setSendEntityMessage(SendEntityMessageAction
                        .newBuilder().setEntityOperationSignaled(EntityOperationSignaledEvent.newBuilder()
                                .setRequestId("r1").setOperation("add")
                                .setTargetInstanceId(StringValue.of("@counter@a"))
                                .setScheduledTime(DtEvents.timestamp(java.time.Instant.now().plusSeconds(3600))))))
                .build());

        OrchestrationState s = timed().waitForInstanceCompletion(GetInstanceRequest.newBuilder().setInstanceId(id)
                .build()).getOrchestrationState();
        assertEquals(OrchestrationStatus.ORCHESTRATION_STATUS_FAILED, s.getOrchestrationStatus());
        assertEquals("UnsupportedAction", s.getFailureDetails().getErrorType());
        assertTrue(s.getFailureDetails().getErrorMessage().contains("sendEntityMessage"),
                s.getFailureDetails().getErrorMessage());
        assertTrue(s.getFailureDetails().getErrorMessage().contains("scheduled"),
                s.getFailureDetails().getErrorMessage());
    }

    /**
     * The created time a client reads is when the start call was made, not when the first turn was committed: the
     * orchestration's clock in its first turn (from which a timer's due time is counted) is not earlier than it.
     * The JavaScript SDK's e2e suite checks that a 3 s timer ends at least 3 s after the created time.
     */
    @Test
    void the_created_time_is_the_start_calls_not_the_first_turns_commit() throws Exception {
        long beforeStart = System.currentTimeMillis();
        String id = startInstance("raw-created");
        long afterStart = System.currentTimeMillis();
        WorkItem item = next();
        long turnClock = item.getOrchestratorRequest().getNewEventsList().stream()
                .filter(e -> e.hasOrchestratorStarted()).findFirst()
                .map(e -> DtEvents.instant(e.getTimestamp()).toEpochMilli())
                .orElseThrow(() -> new AssertionError("no OrchestratorStarted in the first turn"));
        // A gap between the start call and the commit of the first turn, so that the two times cannot coincide.
        Thread.sleep(50);
        timed().completeOrchestratorTask(OrchestratorResponse.newBuilder().setInstanceId(id)
                .setCompletionToken(item.getCompletionToken())
                .addActions(OrchestratorAction.newBuilder().setId(0).setCompleteOrchestration(
                        CompleteOrchestrationAction.newBuilder()
                                .setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED)))
                .build());
        OrchestrationState s = timed().waitForInstanceCompletion(GetInstanceRequest.newBuilder().setInstanceId(id)
                .build()).getOrchestrationState();
        long created = DtEvents.instant(s.getCreatedTimestamp()).toEpochMilli();
        assertTrue(created >= beforeStart && created <= afterStart, "created at " + created + ", the start call ran "
                + beforeStart + ".." + afterStart);
        assertTrue(created <= turnClock, "created at " + created + ", after the first turn's clock " + turnClock);
        long updated = DtEvents.instant(s.getLastUpdatedTimestamp()).toEpochMilli();
        assertTrue(updated >= afterStart + 50, "last updated at " + updated + ", before the first turn's commit");
    }

    @Test
    void an_abandoned_turn_and_an_abandoned_activity_are_redelivered_promptly() throws Exception {
        String id = startInstance("raw-abandon");
        WorkItem first = next();
        assertTrue(first.hasOrchestratorRequest());
        long t0 = System.nanoTime();
        timed().abandonTaskOrchestratorWorkItem(AbandonOrchestrationTaskRequest.newBuilder()
                .setCompletionToken(first.getCompletionToken()).build());
        WorkItem again = next();
        long turnMs = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(again.hasOrchestratorRequest(), "got " + again.getRequestCase());
        assertEquals(id, again.getOrchestratorRequest().getInstanceId());
        assertTrue(!again.getCompletionToken().equals(first.getCompletionToken()), "the token was reused");
        assertTrue(turnMs < 10_000, "redelivered after " + turnMs + " ms");

        // The redelivered turn schedules an activity; the worker abandons that too.
        timed().completeOrchestratorTask(OrchestratorResponse.newBuilder().setInstanceId(id)
                .setCompletionToken(again.getCompletionToken())
                .addActions(OrchestratorAction.newBuilder().setId(0)
                        .setScheduleTask(ScheduleTaskAction.newBuilder().setName("Act")
                                .setInput(StringValue.of("2"))))
                .build());
        WorkItem activity = next();
        assertTrue(activity.hasActivityRequest(), "got " + activity.getRequestCase());
        long t1 = System.nanoTime();
        timed().abandonTaskActivityWorkItem(AbandonActivityTaskRequest.newBuilder()
                .setCompletionToken(activity.getCompletionToken()).build());
        WorkItem activityAgain = next();
        long activityMs = (System.nanoTime() - t1) / 1_000_000;
        assertTrue(activityAgain.hasActivityRequest(), "got " + activityAgain.getRequestCase());
        assertEquals(activity.getActivityRequest().getTaskId(), activityAgain.getActivityRequest().getTaskId());
        assertTrue(activityMs < 10_000, "redelivered after " + activityMs + " ms");

        // The second delivery's result counts: the orchestration sees it and completes.
        timed().completeActivityTask(ActivityResponse.newBuilder().setInstanceId(id)
                .setTaskId(activityAgain.getActivityRequest().getTaskId()).setResult(StringValue.of("3"))
                .setCompletionToken(activityAgain.getCompletionToken()).build());
        WorkItem last = next();
        assertTrue(last.hasOrchestratorRequest());
        assertTrue(last.getOrchestratorRequest().getNewEventsList().stream().anyMatch(e -> e.hasTaskCompleted()),
                "no activity result in " + last.getOrchestratorRequest().getNewEventsList());
        timed().completeOrchestratorTask(OrchestratorResponse.newBuilder().setInstanceId(id)
                .addActions(OrchestratorAction.newBuilder().setId(1).setCompleteOrchestration(
                        CompleteOrchestrationAction.newBuilder()
                                .setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED)
                                .setResult(StringValue.of("3"))))
                .build());
        assertEquals(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED, timed().waitForInstanceCompletion(
                GetInstanceRequest.newBuilder().setInstanceId(id).build()).getOrchestrationState()
                .getOrchestrationStatus());
    }
}
