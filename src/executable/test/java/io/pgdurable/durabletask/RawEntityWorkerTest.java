package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.StringValue;
import io.pgdurable.durabletask.protocol.OrchestratorService.AbandonEntityTaskRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.CleanEntityStorageResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetEntityResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationResultSuccess;
import io.pgdurable.durabletask.protocol.OrchestratorService.SignalEntityRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailureDetails;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc.TaskHubSidecarServiceBlockingStub;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A worker written against the protocol classes, doing with entity batches what the SDKs do only on failure paths:
 * failing a whole batch, answering part of one, abandoning one, holding one while more operations arrive.
 */
class RawEntityWorkerTest {
    private static final Duration WAIT = RawStream.WAIT;
    private static final String COUNTER = "@counter@raw";

    private SidecarHarness hub;
    private RawStream worker;

    @BeforeEach
    void start() {
        // A long lease: a redelivery within the test's bounds can only come from the sidecar's own decision.
        hub = new SidecarHarness("rawent", io.pgdurable.postgres.TestDatabase.newSchemaName("rawent"),
                c -> c.withLockTimeout(Duration.ofMinutes(5)));
        worker = new RawStream(hub.sidecar.port(), GetWorkItemsRequest.newBuilder()
                .setMaxConcurrentOrchestrationWorkItems(4).build());
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
        WorkItem item = worker.next();
        assertTrue(item.hasEntityRequest(), "got " + item.getRequestCase());
        return item;
    }

    private void signal(String operation, String input) {
        timed().signalEntity(SignalEntityRequest.newBuilder().setInstanceId(COUNTER).setName(operation)
                .setInput(StringValue.of(input)).build());
    }

    private static OperationResult ok(String result) {
        return OperationResult.newBuilder().setSuccess(OperationResultSuccess.newBuilder()
                .setResult(StringValue.of(result))).build();
    }

    private void complete(WorkItem item, String state, int answered) {
        EntityBatchResult.Builder r = EntityBatchResult.newBuilder().setCompletionToken(item.getCompletionToken())
                .setEntityState(StringValue.of(state));
        for (int i = 0; i < answered; i++) {
            r.addResults(ok(state));
        }
        timed().completeEntityTask(r.build());
    }

    private GetEntityResponse entity() {
        return timed().getEntity(GetEntityRequest.newBuilder().setInstanceId(COUNTER).setIncludeState(true).build());
    }

    @Test
    void an_entity_runs_one_batch_at_a_time_and_keeps_its_state() throws Exception {
        assertFalse(entity().getExists(), "an entity never signalled must not exist");
        signal("add", "1");
        WorkItem first = next();
        EntityBatchRequest b1 = first.getEntityRequest();
        assertEquals(COUNTER, b1.getInstanceId());
        assertFalse(b1.hasEntityState(), "a new entity has no state");
        assertEquals(1, b1.getOperationsCount());
        assertEquals("add", b1.getOperations(0).getOperation());
        assertEquals("1", b1.getOperations(0).getInput().getValue());

        // While the batch is out, further operations wait: no second batch of the same entity.
        signal("add", "2");
        signal("add", "3");
        assertNull(worker.poll(Duration.ofSeconds(1)), "a second batch of an entity was handed out while one is held");

        complete(first, "1", 1);
        WorkItem second = next();
        EntityBatchRequest b2 = second.getEntityRequest();
        assertEquals("1", b2.getEntityState().getValue(), "the next batch starts from the committed state");
        assertEquals(2, b2.getOperationsCount(), "both waiting operations in one batch");
        assertEquals("2", b2.getOperations(0).getInput().getValue(), "in the order they were sent");
        assertEquals("3", b2.getOperations(1).getInput().getValue());

        // A worker that answers only the first operation: the state is committed, the second runs again.
        complete(second, "3", 1);
        WorkItem third = next();
        assertEquals("3", third.getEntityRequest().getEntityState().getValue());
        assertEquals(1, third.getEntityRequest().getOperationsCount());
        assertEquals("3", third.getEntityRequest().getOperations(0).getInput().getValue());
        complete(third, "6", 1);

        // CompleteEntityTask answers after the commit: the state is there at once.
        GetEntityResponse got = entity();
        assertTrue(got.getExists());
        assertEquals("6", got.getEntity().getSerializedState().getValue());
        assertEquals(COUNTER, got.getEntity().getInstanceId());
    }

    @Test
    void storage_cleaning_releases_a_lock_whose_holder_is_gone_and_removes_empty_entities() throws Exception {
        signal("add", "1");
        complete(next(), "1", 1);
        // A lock taken for an orchestration that does not exist (as after a lock request that reached an entity
        // only after its orchestration had ended): nothing else would ever unlock it.
        java.time.Instant now = java.time.Instant.now();
        hub.provider.enqueueAllForOrchestrator(EntityBatches.toEntity(COUNTER, DtEvents.event(DtEvents.NO_ID, now)
                .setEntityLockRequested(io.pgdurable.durabletask.protocol.OrchestratorService.EntityLockRequestedEvent
                        .newBuilder().setCriticalSectionId("cs-ghost").addLockSet(COUNTER)
                        .setParentInstanceId(StringValue.of("ghost"))).build(), now), null);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!entity().getEntity().getLockedBy().getValue().equals("ghost")) {
            assertTrue(System.nanoTime() < deadline, "the lock was not taken within " + WAIT);
            Thread.sleep(10);
        }
        signal("add", "2");
        assertNull(worker.poll(Duration.ofSeconds(1)), "a signal ran while another held the lock");

        CleanEntityStorageResponse cleaned = timed().cleanEntityStorage(CleanEntityStorageRequest.newBuilder()
                .setReleaseOrphanedLocks(true).setRemoveEmptyEntities(true).build());
        assertEquals(1, cleaned.getOrphanedLocksReleased());
        assertEquals(0, cleaned.getEmptyEntitiesRemoved(), "an entity with state is kept");
        WorkItem held = next();
        assertEquals("2", held.getEntityRequest().getOperations(0).getInput().getValue(), "released: it runs");

        // The operation deletes the state (no state in the result): the entity is empty, and cleaning removes it.
        timed().completeEntityTask(EntityBatchResult.newBuilder().setCompletionToken(held.getCompletionToken())
                .addResults(ok("null")).build());
        assertFalse(entity().getExists());
        assertEquals(1, timed().cleanEntityStorage(CleanEntityStorageRequest.newBuilder()
                .setRemoveEmptyEntities(true).build()).getEmptyEntitiesRemoved());
        assertFalse(timed().getInstance(io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest
                .newBuilder().setInstanceId(COUNTER).build()).getExists(), "the provider instance is gone");
    }

    @Test
    void a_failed_batch_and_an_abandoned_batch_run_again() throws Exception {
        signal("add", "5");
        WorkItem first = next();
        long t0 = System.nanoTime();
        timed().completeEntityTask(EntityBatchResult.newBuilder().setCompletionToken(first.getCompletionToken())
                .setFailureDetails(TaskFailureDetails.newBuilder().setErrorType("Crash").setErrorMessage("boom"))
                .build());
        WorkItem again = next();
        long retryMs = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(first.getEntityRequest().getOperationsList(), again.getEntityRequest().getOperationsList());
        assertTrue(retryMs >= 900, "a failed batch is retried after a pause, not at once (" + retryMs + " ms)");
        assertFalse(entity().getExists(), "a failed batch commits nothing");

        t0 = System.nanoTime();
        timed().abandonTaskEntityWorkItem(AbandonEntityTaskRequest.newBuilder()
                .setCompletionToken(again.getCompletionToken()).build());
        WorkItem third = next();
        long abandonMs = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(first.getEntityRequest().getOperationsList(), third.getEntityRequest().getOperationsList());
        assertTrue(abandonMs < 10_000, "an abandoned batch comes back promptly (" + abandonMs + " ms)");
        complete(third, "5", 1);
    }
}
