package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.DeleteInstanceResult;
import io.pgdurable.spi.ProviderAdmin.ExecutionInfo;
import io.pgdurable.spi.ProviderAdmin.InstanceFilter;
import io.pgdurable.spi.WorkItem;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code bulk_deletion} (CONTRACT §7.14, §3): {@code deleteInstanceBulk} selects terminal root
 * instances by id allowlist, completion time and limit, skips running ones silently and deletes each selected root
 * with its whole tree.
 */
public abstract class BulkDeletionTests extends ConformanceTestBase {

    /** Margin kept on both sides of the completion times when choosing completedBefore cut-offs. */
    protected static final long CLOCK_MARGIN_MS = 50;

    // ------------------------------------------------------------------ helpers

    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> admin = p.asManagementCapability();
        assertTrue(admin != null && admin.isPresent(), "the provider must expose its management capability");
        return admin.get();
    }

    /**
     * One turn that creates {@code instance} (as a child of {@code parent} when not null) and, when
     * {@code completed}, ends it Completed; otherwise it stays Running.
     */
    protected static void createInstanceUnder(OrchestrationProvider p, String instance, String parent,
                                         boolean completed) {
        p.enqueueForOrchestrator(new WorkItem.StartOrchestration(instance, TEST_ORCH, "{}", TEST_VERSION, parent,
                parent == null ? null : 1L, 1), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start of " + instance);
        assertEquals(instance, f.item().instance(), "fetched another instance while creating " + instance);
        Event started = parent == null
                ? startedEvent(1)
                : Events.of(1, Events.ORCHESTRATION_STARTED, "name", TEST_ORCH, "version", TEST_VERSION,
                        "input", "{}", "parent_instance", parent, "parent_id", 1L);
        ExecutionMetadata metadata = testOrchMetadata().withParentInstanceId(parent);
        if (completed) {
            metadata = metadata.withStatus(ExecutionMetadata.COMPLETED, "done");
        }
        ack(p, f.lockToken(), 1, List.of(started), metadata);
    }

    protected static void createCompleted(OrchestrationProvider p, String instance) {
        createInstanceUnder(p, instance, null, true);
    }

    protected static InstanceFilter filter(List<String> ids, Long completedBefore, Integer limit) {
        return new InstanceFilter(Optional.ofNullable(ids), Optional.ofNullable(completedBefore),
                Optional.ofNullable(limit));
    }

    protected static void assertExists(ProviderAdmin admin, String instance) {
        assertEquals(instance, admin.getInstanceInfo(instance).instanceId());
    }

    protected static void assertGone(ProviderAdmin admin, String instance) {
        expectPermanentError("getInstanceInfo of deleted '" + instance + "'", () -> admin.getInstanceInfo(instance));
    }

    // ------------------------------------------------------------------ tests

    /** By ids deletes exactly those; unknown ids and an empty allowlist delete nothing; no filter takes the rest. */
    @Test
    void test_delete_instance_bulk_filter_combinations() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        for (int i = 0; i < 5; i++) {
            createCompleted(p, "bulk-del-filter-" + i);
        }

        DeleteInstanceResult r = admin.deleteInstanceBulk(
                filter(List.of("bulk-del-filter-0", "bulk-del-filter-1"), null, null));
        assertEquals(new DeleteInstanceResult(2, 2, 2, 0), r, "the two listed instances");
        assertGone(admin, "bulk-del-filter-0");
        assertGone(admin, "bulk-del-filter-1");
        for (int i = 2; i < 5; i++) {
            assertExists(admin, "bulk-del-filter-" + i);
        }

        assertEquals(DeleteInstanceResult.NONE,
                admin.deleteInstanceBulk(filter(List.of("does-not-exist-1", "does-not-exist-2"), null, null)),
                "unknown ids are ignored");
        assertEquals(DeleteInstanceResult.NONE, admin.deleteInstanceBulk(filter(List.of(), null, null)),
                "an empty allowlist selects nothing");
        for (int i = 2; i < 5; i++) {
            assertExists(admin, "bulk-del-filter-" + i);
        }

        DeleteInstanceResult rest = admin.deleteInstanceBulk(InstanceFilter.all());
        assertEquals(new DeleteInstanceResult(3, 3, 3, 0), rest, "no filter: every remaining terminal instance");
        for (int i = 2; i < 5; i++) {
            assertGone(admin, "bulk-del-filter-" + i);
        }
        assertEquals(List.of(), admin.listInstances());
    }

    /** Running instances are skipped without error; limit=2 deletes in batches of 2, 2, then 0. */
    @Test
    void test_delete_instance_bulk_safety_and_limits() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createCompleted(p, "bulk-del-safe-completed-1");
        createCompleted(p, "bulk-del-safe-completed-2");
        createInstanceUnder(p, "bulk-del-safe-running-1", null, false);
        createInstanceUnder(p, "bulk-del-safe-running-2", null, false);

        DeleteInstanceResult r = admin.deleteInstanceBulk(filter(List.of("bulk-del-safe-completed-1",
                "bulk-del-safe-completed-2", "bulk-del-safe-running-1", "bulk-del-safe-running-2"), null, null));
        assertEquals(2, r.instancesDeleted(), "only the completed instances");
        assertGone(admin, "bulk-del-safe-completed-1");
        assertGone(admin, "bulk-del-safe-completed-2");
        assertEquals("Running", admin.getInstanceInfo("bulk-del-safe-running-1").status());
        assertEquals("Running", admin.getInstanceInfo("bulk-del-safe-running-2").status());

        for (int i = 0; i < 4; i++) {
            createCompleted(p, "bulk-del-batch-" + i);
        }
        assertEquals(2, admin.deleteInstanceBulk(filter(null, null, 2)).instancesDeleted(), "first batch");
        assertEquals(2, admin.deleteInstanceBulk(filter(null, null, 2)).instancesDeleted(), "second batch");
        assertEquals(0, admin.deleteInstanceBulk(filter(null, null, 2)).instancesDeleted(),
                "third batch: only running instances are left");
        for (int i = 0; i < 4; i++) {
            assertGone(admin, "bulk-del-batch-" + i);
        }
        assertEquals(2, admin.listInstances().size(), "the two running instances remain");
        assertExists(admin, "bulk-del-safe-running-1");
        assertExists(admin, "bulk-del-safe-running-2");
    }

    /** A cut-off before the completions deletes nothing; a cut-off after them deletes both. */
    @Test
    void test_delete_instance_bulk_completed_before_filter() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        List<String> ids = List.of("bulk-del-time-1", "bulk-del-time-2");

        long beforeCreation = System.currentTimeMillis();
        Thread.sleep(CLOCK_MARGIN_MS);
        for (String id : ids) {
            createCompleted(p, id);
        }
        Thread.sleep(CLOCK_MARGIN_MS);
        long afterCreation = System.currentTimeMillis();

        for (String id : ids) {
            ExecutionInfo exec = admin.getExecutionInfo(id, 1);
            assertTrue(exec.completedAtMs().isPresent(), id + " has a completion time");
            long completedAt = exec.completedAtMs().get();
            assertTrue(completedAt > beforeCreation && completedAt < afterCreation, id + " completed at "
                    + completedAt + ", outside [" + beforeCreation + ", " + afterCreation + "]");
        }

        DeleteInstanceResult none = admin.deleteInstanceBulk(filter(ids, beforeCreation, null));
        assertEquals(0, none.instancesDeleted(), "both completed after the cut-off");
        for (String id : ids) {
            assertExists(admin, id);
        }

        DeleteInstanceResult both = admin.deleteInstanceBulk(filter(ids, afterCreation, null));
        assertEquals(2, both.instancesDeleted(), "both completed before the cut-off");
        for (String id : ids) {
            assertGone(admin, id);
        }
    }

    /** Three roots (one child, three children, none) take all seven instances with them. */
    @Test
    void test_delete_instance_bulk_cascades_to_children() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String parent1 = "bulk-del-cascade-parent1";
        String parent2 = "bulk-del-cascade-parent2";
        String standalone = "bulk-del-cascade-standalone";
        createCompleted(p, parent1);
        createInstanceUnder(p, "bulk-del-cascade-child1", parent1, true);
        createCompleted(p, parent2);
        for (String c : List.of("a", "b", "c")) {
            createInstanceUnder(p, "bulk-del-cascade-child2" + c, parent2, true);
        }
        createCompleted(p, standalone);
        List<String> all = List.of(parent1, "bulk-del-cascade-child1", parent2, "bulk-del-cascade-child2a",
                "bulk-del-cascade-child2b", "bulk-del-cascade-child2c", standalone);
        for (String id : all) {
            assertExists(admin, id);
        }

        DeleteInstanceResult r = admin.deleteInstanceBulk(filter(List.of(parent1, parent2, standalone), null, null));
        assertEquals(new DeleteInstanceResult(7, 7, 7, 0), r, "3 roots + 1 + 3 children");
        for (String id : all) {
            assertGone(admin, id);
        }
        assertEquals(List.of(), admin.listInstances());
    }
}
