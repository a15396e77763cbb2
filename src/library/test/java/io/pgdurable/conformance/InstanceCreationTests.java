package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code instance_creation} (CONTRACT §7.3): instances come into being through ack metadata,
 * never through an enqueue, and the metadata's name and version win over the start message's.
 */
public abstract class InstanceCreationTests extends ConformanceTestBase {

    /** The first fetch works before the instance exists; the ack's metadata version is what later fetches report. */
    @Test
    void test_instance_creation_via_metadata() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-A"), null);

        FetchedOrchestration f = fetchOrchRequired(p, "the start of a not yet created instance");
        OrchestrationItem item = f.item();
        assertEquals("instance-A", item.instance());
        assertEquals(TEST_ORCH, item.orchestrationName(), "name taken from the start message");
        assertEquals(1, item.executionId());
        assertEquals(0, item.history().size(), "no history yet");

        ack(p, f.lockToken(), 1, List.of(Events.orchestrationStarted(1, TEST_ORCH, "2.0.0", "{}")),
                ExecutionMetadata.of(TEST_ORCH, "2.0.0"));

        p.enqueueForOrchestrator(startItem("instance-A"), null);
        FetchedOrchestration f2 = fetchOrchRequired(p, "the created instance");
        OrchestrationItem item2 = f2.item();
        assertEquals("instance-A", item2.instance());
        assertEquals(TEST_ORCH, item2.orchestrationName());
        assertEquals("2.0.0", item2.version(), "the version comes from the ack metadata, not the message");
        assertEquals(1, item2.executionId());
        assertEquals(1, item2.history().size(), "the OrchestrationStarted event");

        ackEmpty(p, f2.lockToken(), 1);
    }

    /** Enqueueing a start creates no instance, yet its work can be fetched. */
    @Test
    void test_no_instance_creation_on_enqueue() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(startItem("instance-B"), null);
        assertTrue(p.getInstanceStats("instance-B").isEmpty(), "enqueue must not create the instance");
        assertEquals(0, p.read("instance-B").size(), "enqueue must not write history");

        FetchedOrchestration f = fetchOrchRequired(p, "work of an instance that does not exist yet");
        assertEquals("instance-B", f.item().instance());
        assertTrue(p.getInstanceStats("instance-B").isEmpty(), "fetch must not create the instance either");

        ack(p, f.lockToken(), 1, List.of(startedEvent(1)), testOrchMetadata());
        assertTrue(p.getInstanceStats("instance-B").isPresent(), "the ack with metadata creates the instance");
    }

    /** A start without a version is fetchable; the ack metadata then sets the version. */
    @Test
    void test_null_version_handling() {
        OrchestrationProvider p = newProvider();
        p.enqueueForOrchestrator(new WorkItem.StartOrchestration("instance-C", TEST_ORCH, "{}", null), null);

        FetchedOrchestration f = fetchOrchRequired(p, "a start without version");
        assertEquals("instance-C", f.item().instance());
        assertEquals(TEST_ORCH, f.item().orchestrationName());
        assertNotNull(f.item().version(), "a missing version is reported as a placeholder, never null");

        ack(p, f.lockToken(), 1, List.of(Events.orchestrationStarted(1, TEST_ORCH, "3.0.0", "{}")),
                ExecutionMetadata.of(TEST_ORCH, "3.0.0"));

        p.enqueueForOrchestrator(startItem("instance-C"), null);
        FetchedOrchestration f2 = fetchOrchRequired(p, "the created instance");
        assertEquals("instance-C", f2.item().instance());
        assertEquals("3.0.0", f2.item().version(), "the version set by the ack metadata");
        ackEmpty(p, f2.lockToken(), 1);
    }

    /** A child started by its parent's ack is fetchable before it exists and is created by its own ack. */
    @Test
    void test_sub_orchestration_instance_creation() {
        OrchestrationProvider p = newProvider();
        String child = "parent-instance::child-instance";
        p.enqueueForOrchestrator(startItem("parent-instance"), null);
        FetchedOrchestration parent = fetchOrchRequired(p, "the parent start");
        assertEquals("parent-instance", parent.item().instance());
        ack(p, parent.lockToken(), 1, List.of(Events.orchestrationStarted(1, "ParentOrch", "1.0.0", "{}")),
                List.of(),
                List.of(new WorkItem.StartOrchestration(child, "ChildOrch", "{}", null, "parent-instance", 1L, 1)),
                ExecutionMetadata.of("ParentOrch", "1.0.0"));

        assertTrue(p.getInstanceStats(child).isEmpty(), "the child is not created by its start message");
        FetchedOrchestration c = fetchOrchRequired(p, "the child start");
        assertEquals(child, c.item().instance());
        assertEquals("ChildOrch", c.item().orchestrationName());
        assertEquals(1, c.item().executionId());
        assertEquals(0, c.item().history().size());

        ack(p, c.lockToken(), 1, List.of(Events.orchestrationStarted(1, "ChildOrch", "1.5.0", "{}")),
                ExecutionMetadata.of("ChildOrch", "1.5.0").withParentInstanceId("parent-instance"));
        assertFalse(p.getInstanceStats(child).isEmpty(), "the child's ack creates it");

        p.enqueueForOrchestrator(new WorkItem.StartOrchestration(child, "ChildOrch", "{}", null), null);
        FetchedOrchestration c2 = fetchOrchRequired(p, "the created child");
        assertEquals(child, c2.item().instance());
        assertEquals("ChildOrch", c2.item().orchestrationName());
        assertEquals("1.5.0", c2.item().version(), "the version from the child's ack metadata");
        assertEquals(1, c2.item().history().size());
        ackEmpty(p, c2.lockToken(), 1);
    }
}
