package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.StringValue;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryChunk;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.InstanceQuery;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.ListInstanceIdsResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationState;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.PurgeInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.QueryInstancesRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RestartInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.SkipGracefulOrchestrationTerminationsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.StreamInstanceHistoryRequest;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc.TaskHubSidecarServiceBlockingStub;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The current protocol's client RPCs, called through a stub of the current protocol classes, with a Durable Task
 * for Java 1.5.0 worker running the orchestrations (the RPCs it predates are exercised on its instances).
 */
class ProtocolRpcTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private static SidecarHarness hub;
    private static ManagedChannel channel;
    private static TaskHubSidecarServiceBlockingStub stub;

    @BeforeAll
    static void start() {
        hub = new SidecarHarness("proto");
        hub.startWorker(b -> b
                .addOrchestration(orchestration("Echo", ctx -> ctx.complete(
                        ctx.callActivity("Upper", ctx.getInput(String.class), String.class).await())))
                .addOrchestration(orchestration("WaitForGo", ctx -> ctx.complete(
                        ctx.waitForExternalEvent("go", String.class).await())))
                .addActivity(activity("Upper", ctx -> ctx.getInput(String.class).toUpperCase())));
        channel = ManagedChannelBuilder.forAddress("127.0.0.1", hub.sidecar.port()).usePlaintext().build();
        stub = TaskHubSidecarServiceGrpc.newBlockingStub(channel);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (hub != null) {
            hub.close();
        }
    }

    private static TaskHubSidecarServiceBlockingStub timed() {
        return stub.withDeadlineAfter(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static String start(String name, String id, String input, Map<String, String> tags) {
        CreateInstanceRequest.Builder r = CreateInstanceRequest.newBuilder().setName(name)
                .setInput(StringValue.of("\"" + input + "\"")).putAllTags(tags);
        if (id != null) {
            r.setInstanceId(id);
        }
        return timed().startInstance(r.build()).getInstanceId();
    }

    private static OrchestrationState awaitDone(String id) {
        return timed().waitForInstanceCompletion(GetInstanceRequest.newBuilder().setInstanceId(id)
                .setGetInputsAndOutputs(true).build()).getOrchestrationState();
    }

    @Test
    void tags_are_stored_with_the_instance_and_returned_by_get_and_query() {
        Map<String, String> tags = Map.of("team", "payments", "tier", "gold");
        String id = start("Echo", "tags-1", "abc", tags);
        OrchestrationState done = awaitDone(id);
        assertEquals(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED, done.getOrchestrationStatus());
        assertEquals("\"ABC\"", done.getOutput().getValue());
        assertEquals(tags, done.getTagsMap());

        List<OrchestrationState> found = timed().queryInstances(QueryInstancesRequest.newBuilder()
                .setQuery(InstanceQuery.newBuilder().setInstanceIdPrefix(StringValue.of("tags-"))).build())
                .getOrchestrationStateList();
        assertEquals(1, found.size());
        assertEquals(tags, found.get(0).getTagsMap());
    }

    @Test
    void list_instance_ids_pages_through_every_instance_in_id_order() {
        List<String> mine = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            mine.add(start("Echo", "list-" + i, "x" + i, Map.of()));
        }
        mine.forEach(ProtocolRpcTest::awaitDone);

        List<String> seen = new ArrayList<>();
        ListInstanceIdsRequest.Builder page = ListInstanceIdsRequest.newBuilder().setPageSize(2)
                .addRuntimeStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED);
        int pages = 0;
        while (true) {
            ListInstanceIdsResponse r = timed().listInstanceIds(page.build());
            assertTrue(r.getInstanceIdsCount() <= 2, "page of " + r.getInstanceIdsCount());
            seen.addAll(r.getInstanceIdsList());
            pages++;
            if (!r.hasLastInstanceKey()) {
                break;
            }
            assertTrue(pages < 100, "the listing does not end");
            page.setLastInstanceKey(r.getLastInstanceKey());
        }
        assertTrue(seen.containsAll(mine), "listed " + seen);
        List<String> sorted = new ArrayList<>(seen);
        sorted.sort(null);
        assertEquals(sorted, seen);
        assertEquals(seen.size(), seen.stream().distinct().count(), "an id was listed twice");
        assertTrue(pages >= 3, "5 ids in pages of 2 took " + pages + " page(s)");
    }

    @Test
    void stream_instance_history_returns_the_executions_events() {
        String id = start("Echo", "history-1", "h", Map.of());
        awaitDone(id);
        List<HistoryEvent> events = new ArrayList<>();
        Iterator<HistoryChunk> chunks = timed().streamInstanceHistory(StreamInstanceHistoryRequest.newBuilder()
                .setInstanceId(id).build());
        chunks.forEachRemaining(c -> events.addAll(c.getEventsList()));
        assertTrue(events.stream().anyMatch(HistoryEvent::hasExecutionStarted), "no start in " + events);
        assertTrue(events.stream().anyMatch(HistoryEvent::hasTaskScheduled), "no activity in " + events);
        assertTrue(events.stream().anyMatch(HistoryEvent::hasTaskCompleted), "no activity result in " + events);
        assertTrue(events.get(events.size() - 1).hasExecutionCompleted(), "last: " + events.get(events.size() - 1));

        StatusRuntimeException missing = assertThrows(StatusRuntimeException.class, () -> timed()
                .streamInstanceHistory(StreamInstanceHistoryRequest.newBuilder().setInstanceId("no-such").build())
                .hasNext());
        assertEquals(Status.Code.NOT_FOUND, missing.getStatus().getCode());
    }

    @Test
    void restart_runs_the_instance_again_under_its_id_or_a_new_one() {
        Map<String, String> tags = Map.of("k", "v");
        String id = start("Echo", "restart-1", "again", tags);
        assertEquals("\"AGAIN\"", awaitDone(id).getOutput().getValue());

        String sameId = timed().restartInstance(RestartInstanceRequest.newBuilder().setInstanceId(id).build())
                .getInstanceId();
        assertEquals(id, sameId);
        OrchestrationState rerun = awaitDone(id);
        assertEquals(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED, rerun.getOrchestrationStatus());
        assertEquals("\"AGAIN\"", rerun.getOutput().getValue());
        assertEquals(tags, rerun.getTagsMap());

        String newId = timed().restartInstance(RestartInstanceRequest.newBuilder().setInstanceId(id)
                .setRestartWithNewInstanceId(true).build()).getInstanceId();
        assertNotEquals(id, newId);
        OrchestrationState copy = awaitDone(newId);
        assertEquals("\"AGAIN\"", copy.getOutput().getValue());
        assertEquals("\"again\"", copy.getInput().getValue());
        assertEquals(tags, copy.getTagsMap());

        StatusRuntimeException missing = assertThrows(StatusRuntimeException.class, () -> timed()
                .restartInstance(RestartInstanceRequest.newBuilder().setInstanceId("no-such").build()));
        assertEquals(Status.Code.NOT_FOUND, missing.getStatus().getCode());
    }

    @Test
    void restarting_a_running_instance_under_its_own_id_is_refused() {
        String id = start("WaitForGo", "restart-running", "r", Map.of());
        timed().waitForInstanceStart(GetInstanceRequest.newBuilder().setInstanceId(id).build());
        StatusRuntimeException running = assertThrows(StatusRuntimeException.class, () -> timed()
                .restartInstance(RestartInstanceRequest.newBuilder().setInstanceId(id).build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, running.getStatus().getCode());
        assertTrue(running.getStatus().getDescription().contains("has not finished"),
                running.getStatus().getDescription());
    }

    @Test
    void purging_a_running_instance_answers_zero_and_keeps_it() {
        String id = start("WaitForGo", "purge-running", "p", Map.of());
        timed().waitForInstanceStart(GetInstanceRequest.newBuilder().setInstanceId(id).build());
        assertEquals(0, timed().purgeInstances(PurgeInstancesRequest.newBuilder().setInstanceId(id)
                .setRecursive(true).build()).getDeletedInstanceCount());
        assertTrue(timed().getInstance(GetInstanceRequest.newBuilder().setInstanceId(id).build()).getExists());

        String done = start("Echo", "purge-done", "p", Map.of());
        awaitDone(done);
        assertEquals(1, timed().purgeInstances(PurgeInstancesRequest.newBuilder().setInstanceId(done)
                .setRecursive(true).build()).getDeletedInstanceCount());
        assertFalse(timed().getInstance(GetInstanceRequest.newBuilder().setInstanceId(done).build()).getExists());
    }

    @Test
    void entity_ids_are_checked_and_rewinding_an_unknown_instance_is_not_found() {
        StatusRuntimeException signal = assertThrows(StatusRuntimeException.class, () -> timed()
                .signalEntity(SignalEntityRequest.newBuilder().setInstanceId("counter-a").setName("add").build()));
        assertEquals(Status.Code.INVALID_ARGUMENT, signal.getStatus().getCode());
        assertNotNull(signal.getStatus().getDescription());
        assertTrue(signal.getStatus().getDescription().contains("@name@key"), signal.getStatus().getDescription());

        String longId = "@counter@" + "k".repeat(92); // 101 characters
        StatusRuntimeException tooLong = assertThrows(StatusRuntimeException.class, () -> timed()
                .signalEntity(SignalEntityRequest.newBuilder().setInstanceId(longId).setName("add").build()));
        assertEquals(Status.Code.INVALID_ARGUMENT, tooLong.getStatus().getCode());
        assertTrue(tooLong.getStatus().getDescription().contains("101 characters long; at most 100"),
                tooLong.getStatus().getDescription());

        StatusRuntimeException start = assertThrows(StatusRuntimeException.class, () -> timed()
                .startInstance(CreateInstanceRequest.newBuilder().setName("Echo").setInstanceId("@counter@a")
                        .build()));
        assertEquals(Status.Code.INVALID_ARGUMENT, start.getStatus().getCode());
        assertTrue(start.getStatus().getDescription().contains("entities"), start.getStatus().getDescription());

        StatusRuntimeException rewind = assertThrows(StatusRuntimeException.class, () -> timed()
                .rewindInstance(RewindInstanceRequest.newBuilder().setInstanceId("x").build()));
        assertEquals(Status.Code.NOT_FOUND, rewind.getStatus().getCode());
        assertTrue(rewind.getStatus().getDescription().contains("'x' not found"), rewind.getStatus().getDescription());
    }

    @Test
    void rpcs_the_sidecar_does_not_serve_answer_unimplemented() {
        // Declared, so that the answer can give the reason.
        StatusRuntimeException skip = assertThrows(StatusRuntimeException.class, () -> timed()
                .skipGracefulOrchestrationTerminations(
                        SkipGracefulOrchestrationTerminationsRequest.getDefaultInstance()));
        assertEquals(Status.Code.UNIMPLEMENTED, skip.getStatus().getCode());
        assertTrue(skip.getStatus().getDescription().contains("never waits for entity locks"),
                skip.getStatus().getDescription());

        // Not declared at all: a method of Dapr's fork, called through the stub generated into Dapr's jar.
        var dapr = io.dapr.durabletask.implementation.protobuf.TaskHubSidecarServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        StatusRuntimeException rerun = assertThrows(StatusRuntimeException.class, () -> dapr.rerunWorkflowFromEvent(
                io.dapr.durabletask.implementation.protobuf.OrchestratorService.RerunWorkflowFromEventRequest
                        .newBuilder().setSourceInstanceID("x").build()));
        assertEquals(Status.Code.UNIMPLEMENTED, rerun.getStatus().getCode());
    }
}
