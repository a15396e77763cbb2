package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.StringValue;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityBatchResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityLockRequestedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.EntityOperationCalledEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationResult;
import io.pgdurable.durabletask.protocol.OrchestratorService.OperationResultSuccess;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.WorkItem;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The entity rules that need no database: ids, lock hand-over, messages held back while locked, partial results. */
class EntityBatchesTest {
    private static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");
    private static final String E = "@counter@k";

    private static FetchedOrchestration fetched(List<HistoryEvent> events) {
        List<WorkItem> messages = new ArrayList<>();
        for (HistoryEvent e : events) {
            messages.addAll(EntityBatches.toEntity(E, e, NOW));
        }
        return new FetchedOrchestration(new OrchestrationItem(E, "counter", 1, "", List.of(), messages,
                Optional.empty(), Map.of()), "token", 1);
    }

    private static HistoryEvent signal(String input) {
        return EntityBatches.signal("s-" + input, "add", input, NOW);
    }

    private static HistoryEvent call(String from, String input) {
        return DtEvents.event(DtEvents.NO_ID, NOW).setEntityOperationCalled(EntityOperationCalledEvent.newBuilder()
                .setRequestId("c-" + input).setOperation("add").setInput(StringValue.of(input))
                .setParentInstanceId(StringValue.of(from))).build();
    }

    private static HistoryEvent lock(String from, String section, String... set) {
        return DtEvents.event(DtEvents.NO_ID, NOW).setEntityLockRequested(EntityLockRequestedEvent.newBuilder()
                .setCriticalSectionId(section).addAllLockSet(List.of(set)).setPosition(0)
                .setParentInstanceId(StringValue.of(from))).build();
    }

    private static List<String> inputs(EntityBatches.Batch b) {
        return b.operations.stream().map(o -> o.request().getInput().getValue()).toList();
    }

    @Test
    void entity_ids_are_the_at_name_at_key_form() {
        assertTrue(EntityBatches.isEntityId("@counter@k"));
        assertTrue(EntityBatches.isEntityId("@counter@"), "an empty key is a key");
        assertTrue(!EntityBatches.isEntityId("counter@k") && !EntityBatches.isEntityId("@@k")
                && !EntityBatches.isEntityId("@counter"));
        assertEquals("@counter@Key", EntityBatches.requireEntityId("@Counter@Key"), "name lower-cased, key kept");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EntityBatches.requireEntityId("order-1"));
        assertTrue(e.getMessage().contains("@name@key"), e.getMessage());
    }

    @Test
    void entity_ids_of_up_to_one_hundred_characters_are_accepted() {
        String hundred = "@counter@" + "k".repeat(91);
        assertEquals(100, hundred.length());
        assertNull(EntityBatches.tooLong(hundred));
        String why = EntityBatches.tooLong(hundred + "k");
        assertTrue(why != null && why.contains("101 characters long; at most 100"), why);
    }

    @Test
    void while_locked_only_the_holder_runs_and_the_rest_waits_in_order_for_the_unlock() {
        // Lock taken by orchestration "o" (last entity of its set: the grant goes to "o"), then a signal and a call
        // from another orchestration wait, while o's own call runs.
        EntityBatches.Batch b = EntityBatches.prepare(fetched(List.of(lock("o", "cs", E), signal("1"),
                call("other", "2"), call("o", "3"))), true, null, NOW);
        assertEquals(List.of("3"), inputs(b));
        assertEquals("o", b.lockedBy);
        assertEquals(2, b.deferred.size());
        assertEquals(1, b.lockMessages.size());
        assertTrue(b.lockMessages.get(0) instanceof WorkItem.QueueMessage q && q.instance().equals("o")
                && DtPayload.unwrap(q.data(), HistoryEvent.parser()).hasEntityLockGranted(), "grant to o");

        EntityBatches.Ack ack = EntityBatches.complete(b, EntityBatchResult.newBuilder()
                .setEntityState(StringValue.of("3")).addResults(OperationResult.newBuilder()
                        .setSuccess(OperationResultSuccess.newBuilder().setResult(StringValue.of("3")))).build(), NOW);
        EntityBatches.Stored stored = EntityBatches.Stored.parse(ack.metadata().output());
        assertEquals("3", stored.state());
        assertEquals("o", stored.lockedBy());
        assertEquals(2, stored.deferred().size());

        // Next batch: a signal that came after the unlock runs after the two that waited for it.
        EntityBatches.Batch next = EntityBatches.prepare(fetched(List.of(EntityBatches.unlock("cs", "o", NOW),
                signal("4"))), true, ack.metadata().output(), NOW);
        assertEquals(List.of("1", "2", "4"), inputs(next));
        assertNull(next.lockedBy);
        assertEquals("3", next.request.getEntityState().getValue());
    }

    @Test
    void a_lock_request_is_passed_to_the_next_entity_of_the_set() {
        EntityBatches.Batch b = EntityBatches.prepare(fetched(List.of(lock("o", "cs", E, "@counter@z"))), true,
                null, NOW);
        assertNull(b.request, "no operation for the worker");
        EntityBatches.Ack ack = EntityBatches.withoutWorker(b);
        List<HistoryEvent> forwarded = ack.orchestratorItems().stream()
                .filter(m -> m instanceof WorkItem.QueueMessage q && q.instance().equals("@counter@z"))
                .map(m -> DtPayload.unwrap(((WorkItem.QueueMessage) m).data(), HistoryEvent.parser())).toList();
        assertEquals(1, forwarded.size());
        assertEquals(1, forwarded.get(0).getEntityLockRequested().getPosition());
        assertEquals(ExecutionMetadata.RUNNING, ack.metadata().status(), "a locked entity is kept");
        assertEquals("o", EntityBatches.Stored.parse(ack.metadata().output()).lockedBy());
    }

    @Test
    void operations_without_a_result_are_sent_again_and_an_entity_without_state_is_finished() {
        EntityBatches.Batch b = EntityBatches.prepare(fetched(List.of(signal("1"), signal("2"))), false, null, NOW);
        EntityBatches.Ack ack = EntityBatches.complete(b, EntityBatchResult.newBuilder()
                .addResults(OperationResult.newBuilder().setSuccess(OperationResultSuccess.getDefaultInstance()))
                .build(), NOW);
        List<OperationRequest> again = ack.orchestratorItems().stream()
                .filter(m -> m instanceof WorkItem.QueueMessage)
                .map(m -> DtPayload.unwrap(((WorkItem.QueueMessage) m).data(), HistoryEvent.parser()))
                .map(e -> OperationRequest.newBuilder().setInput(e.getEntityOperationSignaled().getInput()).build())
                .toList();
        assertEquals(List.of("2"), again.stream().map(r -> r.getInput().getValue()).toList());
        assertEquals(ExecutionMetadata.COMPLETED, ack.metadata().status(), "no state: nothing to keep");
        assertEquals("counter", ack.metadata().orchestrationName(), "a new entity is created under its name");
    }
}
