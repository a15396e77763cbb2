package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.DeleteInstanceResult;
import io.pgdurable.spi.ProviderAdmin.InstanceInfo;
import io.pgdurable.spi.ProviderAdmin.InstanceTree;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code deletion} (CONTRACT §7.12, §3): deleting terminal and (forced) running instances, the
 * hierarchy primitives (children, parent, tree), atomic multi-instance deletion with its running and orphan checks,
 * and the zombie guarantees: a deleted instance's in-flight turn and in-flight activity can no longer commit.
 */
public abstract class DeletionTests extends ConformanceTestBase {

    // ------------------------------------------------------------------ helpers

    /** The management facet; the deletion module requires it. */
    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> admin = p.asManagementCapability();
        assertTrue(admin != null && admin.isPresent(), "the provider must expose its management capability");
        return admin.get();
    }

    /**
     * Creates {@code instance} with one turn: start (with {@code parent} as parent instance when not null), fetch,
     * ack of OrchestrationStarted (event 1) with metadata "TestOrch" / "1.0.0", the parent id and {@code status}
     * ({@code null} = stays Running).
     */
    protected static void createInstanceWithStatus(OrchestrationProvider p, String instance, String parent,
                                                   String status, String output) {
        p.enqueueForOrchestrator(new WorkItem.StartOrchestration(instance, TEST_ORCH, "{}", TEST_VERSION, parent,
                parent == null ? null : 1L, 1), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start of " + instance);
        assertEquals(instance, f.item().instance(), "fetched another instance while creating " + instance);
        Event started = parent == null
                ? startedEvent(1)
                : Events.of(1, Events.ORCHESTRATION_STARTED, "name", TEST_ORCH, "version", TEST_VERSION,
                        "input", "{}", "parent_instance", parent, "parent_id", 1L);
        ExecutionMetadata metadata = testOrchMetadata().withParentInstanceId(parent);
        if (status != null) {
            metadata = metadata.withStatus(status, output);
        }
        ack(p, f.lockToken(), 1, List.of(started), metadata);
    }

    protected static void createCompleted(OrchestrationProvider p, String instance) {
        createInstanceWithStatus(p, instance, null, ExecutionMetadata.COMPLETED, "done");
    }

    protected static void createCompletedChild(OrchestrationProvider p, String instance, String parent) {
        createInstanceWithStatus(p, instance, parent, ExecutionMetadata.COMPLETED, "done");
    }

    /** Root {@code root} with children {@code root::sub::2}, {@code root::sub::3} and grandchild under the latter. */
    protected static List<String> createFourLevelFamily(OrchestrationProvider p, String root) {
        String child1 = root + "::sub::2";
        String child2 = root + "::sub::3";
        String grandchild = child2 + "::sub::4";
        createCompleted(p, root);
        createCompletedChild(p, child1, root);
        createCompletedChild(p, child2, root);
        createCompletedChild(p, grandchild, child2);
        return List.of(root, child1, child2, grandchild);
    }

    protected static InstanceInfo assertExists(ProviderAdmin admin, String instance) {
        InstanceInfo info = admin.getInstanceInfo(instance);
        assertEquals(instance, info.instanceId(), "getInstanceInfo returned another instance");
        return info;
    }

    /** getInstanceInfo of an instance that does not exist fails permanently. */
    protected static void assertGone(ProviderAdmin admin, String instance, String why) {
        expectPermanentError("getInstanceInfo of '" + instance + "' (" + why + ")",
                () -> admin.getInstanceInfo(instance));
    }

    protected static String lower(Throwable e) {
        return String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
    }

    protected static void assertResult(DeleteInstanceResult r, long instances, long executions, long events,
                                       long queueMessages, String why) {
        assertEquals(new DeleteInstanceResult(instances, executions, events, queueMessages), r, why);
    }

    // ------------------------------------------------------------------ tests

    /** Completed, failed and cancelled (= Failed) instances delete without force and disappear. */
    @Test
    void test_delete_terminal_instances() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstanceWithStatus(p, "delete-term-completed", null, ExecutionMetadata.COMPLETED, "done");
        createInstanceWithStatus(p, "delete-term-failed", null, ExecutionMetadata.FAILED,
                "error: something went wrong");
        createInstanceWithStatus(p, "delete-term-cancelled", null, ExecutionMetadata.FAILED,
                "cancelled: user requested cancellation");

        assertEquals("Completed", assertExists(admin, "delete-term-completed").status());
        assertEquals("Failed", assertExists(admin, "delete-term-failed").status());
        assertEquals("Failed", assertExists(admin, "delete-term-cancelled").status());

        for (String id : List.of("delete-term-completed", "delete-term-failed", "delete-term-cancelled")) {
            DeleteInstanceResult r = admin.deleteInstance(id, false);
            assertResult(r, 1, 1, 1, 0, "deleting " + id + ": one instance, execution and event, no messages");
            assertGone(admin, id, "after its deletion");
            assertEquals(List.of(), p.read(id), "history of " + id + " removed");
            assertEquals(List.of(), admin.listExecutions(id), "executions of " + id + " removed");
            assertFalse(admin.listInstances().contains(id), id + " still listed");
        }
        assertEquals(List.of(), admin.listInstances(), "all three instances deleted");
    }

    /** A running instance is protected unless forced; the refusal is permanent and says "running". */
    @Test
    void test_delete_running_rejected_force_succeeds() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "delete-running-force");
        assertEquals("Running", assertExists(admin, "delete-running-force").status());

        ProviderException e = expectPermanentError("non-forced delete of a running instance",
                () -> admin.deleteInstance("delete-running-force", false));
        assertTrue(lower(e).contains("running"), "the error should mention 'running': " + e.getMessage());

        assertEquals("Running", assertExists(admin, "delete-running-force").status(),
                "the refused delete must keep the instance");
        assertEquals(1, p.read("delete-running-force").size(), "the refused delete must keep the history");

        DeleteInstanceResult r = admin.deleteInstance("delete-running-force", true);
        assertResult(r, 1, 1, 1, 0, "forced delete of the running instance");
        assertGone(admin, "delete-running-force", "after the forced delete");
        assertEquals(List.of(), p.read("delete-running-force"));
    }

    /** Deleting an id that never existed fails permanently with "not found". */
    @Test
    void test_delete_nonexistent_instance() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        for (boolean force : new boolean[] {false, true}) {
            ProviderException e = expectPermanentError("delete of an unknown instance (force=" + force + ")",
                    () -> admin.deleteInstance("does-not-exist-12345", force));
            assertTrue(lower(e).contains("not found"), "the error should say 'not found': " + e.getMessage());
        }
    }

    /** Deletion removes pending orchestrator and worker messages and the lock, so the id is reusable at once. */
    @Test
    void test_delete_cleans_queues_and_locks() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String id = "delete-queues-locks";
        p.enqueueForOrchestrator(startItem(id), null);
        p.enqueueForWorker(activity(id, 1, "TestActivity", "{}"));
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        assertEquals(id, f.item().instance());
        ack(p, f.lockToken(), 1, List.of(startedEvent(1)),
                testOrchMetadata().withStatus(ExecutionMetadata.COMPLETED, "done"));
        // A late event for the completed instance stays queued until the instance is deleted.
        p.enqueueForOrchestrator(new WorkItem.ExternalRaised(id, "late-event", "{}"), null);

        DeleteInstanceResult r = admin.deleteInstance(id, false);
        assertEquals(1, r.instancesDeleted());
        assertEquals(2, r.queueMessagesDeleted(), "the pending activity and the late orchestrator message");
        assertNoWorkItem(p, "the deleted instance's activity was removed from the worker queue");
        assertNoOrchItem(p, "the deleted instance's late message was removed from the orchestrator queue");

        String input = "{\"reused\": true}";
        p.enqueueForOrchestrator(new WorkItem.StartOrchestration(id, "ReusedOrch", input, "2.0.0"), null);
        FetchedOrchestration again = fetchOrchRequired(p, "the start of the reused id");
        assertEquals(id, again.item().instance());
        assertEquals("ReusedOrch", again.item().orchestrationName(), "a fresh start, not the deleted instance");
        assertEquals(1, again.item().executionId());
        assertEquals(List.of(), again.item().history(), "no history survives the deletion");
        assertEquals(1, again.item().messages().size(), "only the new start: " + again.item().messages());
        assertInstanceOf(WorkItem.StartOrchestration.class, again.item().messages().get(0));

        ack(p, again.lockToken(), 1, List.of(Events.orchestrationStarted(1, "ReusedOrch", "2.0.0", input)),
                ExecutionMetadata.of("ReusedOrch", "2.0.0"));
        InstanceInfo info = assertExists(admin, id);
        assertEquals("ReusedOrch", info.orchestrationName(), "the recreated instance has the new name");
        assertEquals("2.0.0", info.orchestrationVersion());
        assertEquals("Running", info.status(), "the recreated instance is running, not the old Completed");
        assertEquals(Optional.empty(), info.output(), "no output carried over from the deleted instance");
        assertEquals(1, p.read(id).size());
    }

    /** Sub-orchestrations cannot be deleted directly (even forced); deleting the root removes all four levels. */
    @Test
    void test_cascade_delete_hierarchy() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String root = "cascade-root";
        String child1 = "cascade-child1";
        String child2 = "cascade-child2";
        String grandchild = "cascade-grandchild";
        createCompleted(p, root);
        createCompletedChild(p, child1, root);
        createCompletedChild(p, child2, root);
        createCompletedChild(p, grandchild, child1);
        for (String id : List.of(root, child1, child2, grandchild)) {
            assertExists(admin, id);
        }

        for (String sub : List.of(child1, grandchild)) {
            for (boolean force : new boolean[] {false, true}) {
                ProviderException e = expectPermanentError("direct delete of sub-orchestration " + sub
                        + " (force=" + force + ")", () -> admin.deleteInstance(sub, force));
                String m = lower(e);
                assertTrue(m.contains("sub-orchestration") || m.contains("root") || m.contains("parent"),
                        "the error should point at the sub-orchestration / root / parent: " + e.getMessage());
            }
        }
        for (String id : List.of(root, child1, child2, grandchild)) {
            assertExists(admin, id);
        }

        DeleteInstanceResult r = admin.deleteInstance(root, false);
        assertResult(r, 4, 4, 4, 0, "the root delete aggregates all four instances");
        for (String id : List.of(root, child1, child2, grandchild)) {
            assertGone(admin, id, "cascade-deleted with the root");
        }
        assertEquals(List.of(), admin.listInstances());
    }

    /** A turn in flight while its instance is force-deleted cannot commit and cannot recreate the instance. */
    @Test
    void test_force_delete_prevents_ack_recreation() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String id = "zombie-prevention";
        createInstance(p, id);
        p.enqueueForOrchestrator(new WorkItem.ExternalRaised(id, "test-event", "{}"), null);
        FetchedOrchestration turn = fetchOrchRequired(p, "the event turn");
        assertEquals(id, turn.item().instance());

        DeleteInstanceResult r = admin.deleteInstance(id, true);
        assertEquals(1, r.instancesDeleted(), "the forced delete removes the locked instance");
        assertEquals(1, r.queueMessagesDeleted(), "the locked turn's message is deleted too");

        // The ack carries name and version, so a provider that skipped the lock check would recreate the row.
        expectPermanentError("the ack of a turn whose instance was force-deleted",
                () -> ack(p, turn.lockToken(), 1, List.of(Events.externalEvent(2, "test-event", "{}")),
                        testOrchMetadata()));
        assertGone(admin, id, "the failed ack must not recreate the instance");
        assertEquals(List.of(), p.read(id), "the failed ack must not write history");
        assertEquals(List.of(), admin.listExecutions(id), "the failed ack must not create an execution");
        assertNoOrchItem(p, "nothing of the deleted instance is left to fetch");
    }

    /** listChildren returns the direct children only; leaves and unknown ids give an empty list. */
    @Test
    void test_list_children() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        List<String> family = createFourLevelFamily(p, "list-children-root");
        String root = family.get(0);
        String child1 = family.get(1);
        String child2 = family.get(2);
        String grandchild = family.get(3);

        List<String> rootChildren = admin.listChildren(root);
        assertEquals(2, rootChildren.size(), "direct children of the root only: " + rootChildren);
        assertEquals(Set.of(child1, child2), Set.copyOf(rootChildren));

        assertEquals(List.of(grandchild), admin.listChildren(child2));
        assertEquals(List.of(), admin.listChildren(child1), "child1 is a leaf");
        assertEquals(List.of(), admin.listChildren(grandchild), "the grandchild is a leaf");
        assertEquals(List.of(), admin.listChildren("non-existent"), "unknown id: empty, not an error");
    }

    /** getParentId: empty for a root, the parent for a child, a permanent "not found" error for an unknown id. */
    @Test
    void test_delete_get_parent_id() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String root = "parent-id-root";
        String child = root + "::sub::2";
        String grandchild = child + "::sub::3";
        createCompleted(p, root);
        createCompletedChild(p, child, root);
        createCompletedChild(p, grandchild, child);

        assertEquals(Optional.empty(), admin.getParentId(root), "a root has no parent");
        assertEquals(Optional.of(root), admin.getParentId(child));
        assertEquals(Optional.of(child), admin.getParentId(grandchild), "the direct parent, not the root");

        ProviderException e = expectPermanentError("getParentId of an unknown instance",
                () -> admin.getParentId("non-existent"));
        assertTrue(lower(e).contains("not found"), "the error should say 'not found': " + e.getMessage());
    }

    /** The tree of a root holds all four instances; the tree of a leaf is just the leaf. */
    @Test
    void test_delete_get_instance_tree() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        List<String> family = createFourLevelFamily(p, "tree-root");
        String root = family.get(0);
        String child2 = family.get(2);
        String grandchild = family.get(3);

        InstanceTree tree = admin.getInstanceTree(root);
        assertEquals(root, tree.rootId());
        assertEquals(4, tree.size(), "root, two children and a grandchild: " + tree.allIds());
        assertEquals(Set.copyOf(family), Set.copyOf(tree.allIds()));
        assertFalse(tree.isRootOnly(), "the root has descendants");

        InstanceTree sub = admin.getInstanceTree(child2);
        assertEquals(Set.of(child2, grandchild), Set.copyOf(sub.allIds()), "a subtree holds its own descendants");

        InstanceTree leaf = admin.getInstanceTree(grandchild);
        assertEquals(grandchild, leaf.rootId());
        assertEquals(1, leaf.size());
        assertEquals(List.of(grandchild), leaf.allIds());
        assertTrue(leaf.isRootOnly(), "a leaf's tree is root-only");
    }

    /** Three independent completed instances go in one call; an empty id list deletes nothing. */
    @Test
    void test_delete_instances_atomic() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        List<String> ids = List.of("atomic-del-1", "atomic-del-2", "atomic-del-3");
        for (String id : ids) {
            createCompleted(p, id);
        }
        createCompleted(p, "atomic-del-bystander");

        assertResult(admin.deleteInstancesAtomic(List.of(), false), 0, 0, 0, 0, "an empty id list");
        for (String id : ids) {
            assertExists(admin, id);
        }

        DeleteInstanceResult r = admin.deleteInstancesAtomic(ids, false);
        assertResult(r, 3, 3, 3, 0, "three instances with one execution and one event each");
        for (String id : ids) {
            assertGone(admin, id, "deleted in the atomic batch");
        }
        assertExists(admin, "atomic-del-bystander");
        assertEquals(List.of("atomic-del-bystander"), admin.listInstances(), "only the bystander remains");
    }

    /** A batch with a running instance is refused as a whole without force and deleted with force. */
    @Test
    void test_delete_instances_atomic_force() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String completed = "atomic-force-completed";
        String running = "atomic-force-running";
        createCompleted(p, completed);
        createInstance(p, running);
        List<String> ids = List.of(completed, running);

        ProviderException e = expectPermanentError("non-forced batch delete with a running instance",
                () -> admin.deleteInstancesAtomic(ids, false));
        assertTrue(lower(e).contains("running"), "the error should mention 'running': " + e.getMessage());
        assertEquals("Completed", assertExists(admin, completed).status(), "nothing of the batch is deleted");
        assertEquals("Running", assertExists(admin, running).status(), "nothing of the batch is deleted");

        DeleteInstanceResult r = admin.deleteInstancesAtomic(ids, true);
        assertResult(r, 2, 2, 2, 0, "the forced batch");
        assertGone(admin, completed, "forced batch");
        assertGone(admin, running, "forced batch");
    }

    /** Deleting a parent without its child would orphan the child: refused and rolled back, even when forced. */
    @Test
    void test_delete_instances_atomic_orphan_detection() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String root = "orphan-detect-root";
        String child = root + "::sub::2";
        createCompleted(p, root);
        createCompletedChild(p, child, root);
        assertEquals(Optional.of(root), assertExists(admin, child).parentInstanceId());

        for (boolean force : new boolean[] {false, true}) {
            ProviderException e = expectPermanentError("deleting the parent without its child (force=" + force
                    + ")", () -> admin.deleteInstancesAtomic(List.of(root), force));
            String m = lower(e);
            assertTrue(m.contains("child") || m.contains("orphan") || m.contains("tree"),
                    "the error should mention the child / orphan / tree problem: " + e.getMessage());
            assertExists(admin, root);
            assertExists(admin, child);
            assertEquals(1, p.read(root).size(), "the refused batch is rolled back");
        }

        DeleteInstanceResult r = admin.deleteInstancesAtomic(List.of(root, child), false);
        assertResult(r, 2, 2, 2, 0, "the complete tree");
        assertGone(admin, root, "complete tree deleted");
        assertGone(admin, child, "complete tree deleted");
    }

    /** An activity in flight across a force delete and re-creation of its instance cannot deliver its result. */
    @Test
    void test_stale_activity_after_delete_recreate() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String id = "stale-activity-recreate";
        p.enqueueForOrchestrator(startItem(id), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        ack(p, f.lockToken(), 1, List.of(startedEvent(1), Events.activityScheduled(2, "OldActivity", "old-input")),
                List.of(new WorkItem.ActivityExecute(id, 1, 2, "OldActivity", "old-input")), List.of(),
                testOrchMetadata());

        FetchedWorkItem oldWork = fetchWorkRequired(p, "the old activity");
        assertEquals(2, asActivity(oldWork).id());

        DeleteInstanceResult r = admin.deleteInstance(id, true);
        assertEquals(1, r.instancesDeleted());
        assertEquals(1, r.queueMessagesDeleted(), "the in-flight activity row is deleted with the instance");
        assertGone(admin, id, "force-deleted");

        createInstance(p, id);
        assertEquals(TEST_ORCH, assertExists(admin, id).orchestrationName());

        expectPermanentError("the stale activity's ack after delete and re-creation",
                () -> p.ackWorkItem(oldWork.lockToken(),
                        new WorkItem.ActivityCompleted(id, 1, 2, "stale-result-from-old-instance")));
        assertNoWorkItem(p, "the old activity must not come back");

        p.enqueueForOrchestrator(new WorkItem.ExternalRaised(id, "probe-event", "{}"), null);
        FetchedOrchestration probe = fetchOrchRequired(p, "the probe of the new instance");
        assertEquals(id, probe.item().instance());
        List<WorkItem> messages = probe.item().messages();
        assertEquals(1, messages.size(), "only the probe, no stale completion: " + messages);
        WorkItem.ExternalRaised raised = assertInstanceOf(WorkItem.ExternalRaised.class, messages.get(0));
        assertEquals("probe-event", raised.name());
        assertEquals(1, probe.item().history().size(), "the new instance's own history only");
        assertEquals(Events.ORCHESTRATION_STARTED, probe.item().history().get(0).type());
    }
}
