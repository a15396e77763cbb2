package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code multi_execution} (CONTRACT §7.6, §4.6): each execution of an instance keeps its own
 * history, {@code read} returns the latest one and the current execution pointer follows the acks.
 */
public abstract class MultiExecutionTests extends ConformanceTestBase {

    /** Runs one turn: enqueue a start for {@code executionId}, fetch it and ack the delta under that execution. */
    private static void runExecution(OrchestrationProvider p, String instance, long executionId, List<Event> delta,
                                     ExecutionMetadata metadata) {
        p.enqueueForOrchestrator(startItem(instance, executionId), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start of execution " + executionId);
        assertEquals(instance, f.item().instance());
        ack(p, f.lockToken(), executionId, delta, metadata);
    }

    private static List<String> types(List<Event> events) {
        return events.stream().map(Event::type).toList();
    }

    /** Executions 1 (3 events) and 2 (2 events) are stored apart; read() returns execution 2. */
    @Test
    void test_execution_isolation() {
        OrchestrationProvider p = newProvider();
        runExecution(p, "instance-A", 1, List.of(
                startedEvent(1),
                Events.activityScheduled(2, "Activity1", "input1"),
                Events.orchestrationCompleted(3, "result1")), ExecutionMetadata.empty());
        runExecution(p, "instance-A", 2, List.of(
                startedEvent(1),
                Events.orchestrationCompleted(2, "result2")), ExecutionMetadata.empty());

        List<Event> first = p.readWithExecution("instance-A", 1);
        assertEquals(List.of("OrchestrationStarted", "ActivityScheduled", "OrchestrationCompleted"), types(first));
        assertEquals("result1", eventField(first.get(2), "output"));

        List<Event> second = p.readWithExecution("instance-A", 2);
        assertEquals(List.of("OrchestrationStarted", "OrchestrationCompleted"), types(second));
        assertEquals("result2", eventField(second.get(1), "output"));

        List<Event> latest = p.read("instance-A");
        assertEquals(2, latest.size(), "read() returns the latest execution");
        assertEquals("result2", eventField(latest.get(1), "output"));
    }

    /** read() follows the latest execution while readWithExecution() still reaches the first. */
    @Test
    void test_latest_execution_detection() {
        OrchestrationProvider p = newProvider();
        runExecution(p, "instance-A", 1, List.of(Events.activityScheduled(1, "A", "")), ExecutionMetadata.empty());
        runExecution(p, "instance-A", 2, List.of(Events.activityScheduled(1, "B", "")), ExecutionMetadata.empty());

        List<Event> latest = p.read("instance-A");
        assertEquals(1, latest.size());
        assertEquals("ActivityScheduled", latest.get(0).type());
        assertEquals("B", eventField(latest.get(0), "name"), "read() returns execution 2");

        List<Event> first = p.readWithExecution("instance-A", 1);
        assertEquals(1, first.size());
        assertEquals("A", eventField(first.get(0), "name"), "execution 1 is unchanged");
    }

    /** The first fetch reports execution 1; after an ack for execution 2 the fetch reports execution 2. */
    @Test
    void test_execution_id_sequencing() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A", 1), null);
        FetchedOrchestration f1 = fetchOrchRequired(p, "the first start");
        assertEquals(1, f1.item().executionId(), "a new instance starts at execution 1");
        ack(p, f1.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());

        p.enqueueForOrchestrator(startItem("instance-A", 2), null);
        FetchedOrchestration f2 = fetchOrchRequired(p, "the second start");
        assertEquals(1, f2.item().executionId(), "still execution 1 until an ack moves the pointer");
        ack(p, f2.lockToken(), 2, List.of(startedEvent(1)), testOrchMetadata());

        p.enqueueForOrchestrator(startItem("instance-A", 3), null);
        FetchedOrchestration f3 = fetchOrchRequired(p, "the third start");
        assertEquals(2, f3.item().executionId(), "the current execution is 2");
        assertEquals(1, f3.item().history().size(), "history of execution 2 only");
    }

    /** A ContinueAsNew turn fetched at execution 1 and acked as execution 2 makes execution 2 current. */
    @Test
    void test_continue_as_new_creates_new_execution() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "instance-A");

        // Execution 1 ends with continue-as-new and enqueues the ContinueAsNew message.
        p.enqueueForOrchestrator(poke("instance-A"), null);
        FetchedOrchestration turn = fetchOrchRequired(p, "the poke of execution 1");
        ack(p, turn.lockToken(), 1, List.of(Events.orchestrationContinuedAsNew(2, "new-input")), List.of(),
                List.of(new WorkItem.ContinueAsNew("instance-A", TEST_ORCH, "new-input", TEST_VERSION, List.of(),
                        null)),
                ExecutionMetadata.empty().withStatus(ExecutionMetadata.CONTINUED_AS_NEW, "new-input"));

        FetchedOrchestration can = fetchOrchRequired(p, "the ContinueAsNew message");
        assertEquals(1, can.item().executionId(), "the ContinueAsNew turn is fetched at the current execution 1");
        assertEquals(1, can.item().messages().size());
        WorkItem.ContinueAsNew msg = assertInstanceOf(WorkItem.ContinueAsNew.class, can.item().messages().get(0));
        assertEquals("new-input", msg.input());
        ack(p, can.lockToken(), 2, List.of(Events.orchestrationStarted(1, TEST_ORCH, TEST_VERSION, "new-input")),
                testOrchMetadata().withStatus(ExecutionMetadata.RUNNING, null));

        p.enqueueForOrchestrator(poke("instance-A"), null);
        FetchedOrchestration next = fetchOrchRequired(p, "a turn of the new execution");
        assertEquals(2, next.item().executionId(), "continue-as-new created execution 2");
        assertEquals(1, next.item().history().size(), "execution 2 starts with its own history");
        assertEquals("new-input", eventField(next.item().history().get(0), "input"));

        assertEquals(1, p.read("instance-A").size(), "read() returns execution 2");
        assertEquals(List.of("OrchestrationStarted", "OrchestrationContinuedAsNew"),
                types(p.readWithExecution("instance-A", 1)), "execution 1 keeps its history");
    }

    /** Three executions each keep their own history; the latest is execution 3. */
    @Test
    void test_execution_history_persistence() {
        OrchestrationProvider p = newProvider();
        for (long exec = 1; exec <= 3; exec++) {
            runExecution(p, "instance-A", exec,
                    List.of(Events.activityScheduled(1, "Activity-" + exec, "input-" + exec)),
                    ExecutionMetadata.empty());
        }
        for (long exec = 1; exec <= 3; exec++) {
            List<Event> history = p.readWithExecution("instance-A", exec);
            assertEquals(1, history.size(), "execution " + exec);
            assertEquals("Activity-" + exec, eventField(history.get(0), "name"));
            assertEquals("input-" + exec, eventField(history.get(0), "input"));
        }
        List<Event> latest = p.read("instance-A");
        assertEquals(1, latest.size());
        assertEquals("Activity-3", eventField(latest.get(0), "name"), "read() returns execution 3");
    }
}
