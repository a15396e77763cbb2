package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.StringValue;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.OrchestratorAction;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.OrchestratorResponse;
import io.dapr.durabletask.implementation.protobuf.OrchestratorService.ScheduleTaskAction;
import org.junit.jupiter.api.Test;

/** Requests of Dapr's protocol fork, built with Dapr's own classes, read with the upstream ones. */
class ForkToleranceTest {

    private static byte[] daprResponse(String taskExecutionId) {
        return OrchestratorResponse.newBuilder().setInstanceId("i1")
                .addActions(OrchestratorAction.newBuilder().setId(7)
                        .setScheduleTask(ScheduleTaskAction.newBuilder().setName("Slow")
                                .setInput(StringValue.of("42")).setTaskExecutionId(taskExecutionId)))
                .build().toByteArray();
    }

    @Test
    void a_fork_field_that_is_not_the_declared_message_is_dropped_and_the_rest_kept() throws Exception {
        // '3' starts a group on the wire: as upstream's TraceContext (field 5) this can never parse.
        byte[] bytes = daprResponse("3f2a9c1e-0000-4000-8000-000000000000");
        assertThrows(InvalidProtocolBufferException.class,
                () -> io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.parseFrom(bytes));

        var repaired = io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.parseFrom(
                ForkTolerance.repair(bytes,
                        io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.getDescriptor(), 0));
        assertEquals("i1", repaired.getInstanceId());
        assertEquals(1, repaired.getActionsCount());
        assertEquals(7, repaired.getActions(0).getId());
        assertEquals("Slow", repaired.getActions(0).getScheduleTask().getName());
        assertEquals("42", repaired.getActions(0).getScheduleTask().getInput().getValue());
        assertFalse(repaired.getActions(0).getScheduleTask().hasParentTraceContext());
    }

    @Test
    void a_request_that_parses_comes_out_byte_for_byte() throws Exception {
        byte[] upstream = io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.newBuilder()
                .setInstanceId("i2").setCompletionToken("t").build().toByteArray();
        assertArrayEquals(upstream, ForkTolerance.repair(upstream,
                io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse.getDescriptor(), 0));
    }
}
