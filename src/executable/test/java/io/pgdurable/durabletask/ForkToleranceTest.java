package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.StringValue;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.CompleteOrchestrationAction;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.HistoryEvent;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.OrchestrationStatus;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.OrchestratorAction;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.OrchestratorResponse;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.ScheduleTaskAction;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.TaskScheduledEvent;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.TaskRouter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Requests of Dapr's protocol fork, built with Dapr's own classes, read with the sidecar's. */
class ForkToleranceTest {

    /** An activity scheduled by Dapr's worker: the fork always sets its task execution id (field 5). */
    private static ScheduleTaskAction.Builder daprActivity() {
        return ScheduleTaskAction.newBuilder().setName("Slow").setInput(StringValue.of("42"))
                .setTaskExecutionId("3f2a9c1e-0000-4000-8000-000000000000");
    }

    @Test
    void a_fork_field_this_protocol_does_not_declare_is_read_as_unknown() throws Exception {
        byte[] bytes = OrchestratorResponse.newBuilder().setInstanceId("i1")
                .addActions(OrchestratorAction.newBuilder().setId(7).setScheduleTask(daprActivity()))
                .build().toByteArray();

        var read = io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.parseFrom(bytes);
        var task = read.getActions(0).getScheduleTask();
        assertEquals("Slow", task.getName());
        assertEquals("42", task.getInput().getValue());
        assertTrue(task.getUnknownFields().hasField(5), "the fork's task execution id stays an unknown field");
    }

    @Test
    void a_fork_field_that_is_not_the_declared_message_is_dropped_and_the_rest_kept() throws Exception {
        // A continue-as-new carrying a history event of the fork: its TaskScheduled field 5 is a task execution id,
        // where this protocol has a tag (a map entry, a message). '3' starts a group on the wire, so read as a map
        // entry it can never parse.
        HistoryEvent carried = HistoryEvent.newBuilder().setEventId(3).setTaskScheduled(TaskScheduledEvent
                .newBuilder().setName("Slow").setTaskExecutionId("3f2a9c1e-0000-4000-8000-000000000000")).build();
        byte[] bytes = OrchestratorResponse.newBuilder().setInstanceId("i1")
                .addActions(OrchestratorAction.newBuilder().setId(7).setCompleteOrchestration(
                        CompleteOrchestrationAction.newBuilder()
                                .setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_CONTINUED_AS_NEW)
                                .setResult(StringValue.of("42")).addCarryoverEvents(carried)))
                .build().toByteArray();
        assertThrows(InvalidProtocolBufferException.class,
                () -> io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.parseFrom(bytes));

        var repaired = io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.parseFrom(
                ForkTolerance.repair(bytes,
                        io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.getDescriptor(), 0));
        assertEquals("i1", repaired.getInstanceId());
        assertEquals(1, repaired.getActionsCount());
        assertEquals(7, repaired.getActions(0).getId());
        var complete = repaired.getActions(0).getCompleteOrchestration();
        assertEquals("42", complete.getResult().getValue());
        assertEquals(3, complete.getCarryoverEvents(0).getEventId());
        assertEquals("Slow", complete.getCarryoverEvents(0).getTaskScheduled().getName());
        assertEquals(Map.of(), complete.getCarryoverEvents(0).getTaskScheduled().getTagsMap());
    }

    @Test
    void an_app_id_router_on_an_action_reads_as_a_rewind() throws Exception {
        // Field 9 of an action: the fork's app-id router, this protocol's rewindOrchestration. An id that parses as
        // a rewind's history stays one; one that does not loses that history, not the field. Either way the action
        // is a rewind, which fails the orchestration (docs/durabletask.md).
        for (String appId : List.of("myapp", "3f2a9c1e")) {
            byte[] bytes = OrchestratorResponse.newBuilder().setInstanceId("i1")
                    .addActions(OrchestratorAction.newBuilder().setId(7).setScheduleTask(daprActivity())
                            .setRouter(TaskRouter.newBuilder().setSourceAppID(appId)))
                    .build().toByteArray();
            var read = io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.parseFrom(
                    ForkTolerance.repair(bytes,
                            io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.getDescriptor(),
                            0));
            assertTrue(read.getActions(0).hasRewindOrchestration(), appId);
        }
    }

    @Test
    void a_request_that_parses_comes_out_byte_for_byte() throws Exception {
        byte[] ours = io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.newBuilder()
                .setInstanceId("i2").setCompletionToken("t").build().toByteArray();
        assertArrayEquals(ours, ForkTolerance.repair(ours,
                io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.getDescriptor(), 0));
    }
}
