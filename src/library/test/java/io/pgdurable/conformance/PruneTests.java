package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.InstanceFilter;
import io.pgdurable.spi.ProviderAdmin.InstanceInfo;
import io.pgdurable.spi.ProviderAdmin.PruneOptions;
import io.pgdurable.spi.ProviderAdmin.PruneResult;
import io.pgdurable.spi.WorkItem;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code prune} (CONTRACT §7.13, §3): pruning deletes old executions (history and execution rows)
 * of an instance, never its current execution; keepLast counts the current execution; bulk pruning also covers
 * instances that are still running.
 */
public abstract class PruneTests extends ConformanceTestBase {

    // ------------------------------------------------------------------ helpers

    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> admin = p.asManagementCapability();
        assertTrue(admin != null && admin.isPresent(), "the provider must expose its management capability");
        return admin.get();
    }

    protected static PruneOptions keepLast(Integer n) {
        return new PruneOptions(Optional.ofNullable(n), Optional.empty());
    }

    protected static InstanceFilter ids(String... ids) {
        return new InstanceFilter(Optional.of(List.of(ids)), Optional.empty(), Optional.empty());
    }

    /**
     * Builds a continue-as-new chain of {@code executions} executions, one turn each: the first from a start, the
     * others from a ContinueAsNew message; every turn acks OrchestrationStarted (event 1) under its own execution
     * id. Executions before the last end ContinuedAsNew, the last gets {@code lastStatus}.
     */
    protected static void createExecutionChain(OrchestrationProvider p, String instance, int executions,
                                               String lastStatus) {
        for (long exec = 1; exec <= executions; exec++) {
            WorkItem message = exec == 1
                    ? startItem(instance)
                    : new WorkItem.ContinueAsNew(instance, TEST_ORCH, "{\"exec\":" + exec + "}", TEST_VERSION,
                            List.of(), null);
            p.enqueueForOrchestrator(message, null);
            FetchedOrchestration f = fetchOrchRequired(p, "execution " + exec + " of " + instance);
            assertEquals(instance, f.item().instance());
            String status = exec == executions ? lastStatus : ExecutionMetadata.CONTINUED_AS_NEW;
            ack(p, f.lockToken(), exec,
                    List.of(Events.orchestrationStarted(1, TEST_ORCH, TEST_VERSION, "{\"exec\":" + exec + "}")),
                    testOrchMetadata().withStatus(status, outputFor(status)));
        }
    }

    private static String outputFor(String status) {
        if (ExecutionMetadata.CONTINUED_AS_NEW.equals(status)) {
            return "{}";
        }
        return ExecutionMetadata.RUNNING.equals(status) ? null : "out";
    }

    protected static void createCompletedChain(OrchestrationProvider p, String instance, int executions) {
        createExecutionChain(p, instance, executions, ExecutionMetadata.COMPLETED);
    }

    /** Only {@code expected} executions remain, each still with its one history event. */
    protected static void assertExecutions(OrchestrationProvider p, ProviderAdmin admin, String instance,
                                           List<Long> expected, int chainLength) {
        assertEquals(expected, admin.listExecutions(instance), "remaining executions of " + instance);
        for (long exec = 1; exec <= chainLength; exec++) {
            int events = p.readWithExecution(instance, exec).size();
            assertEquals(expected.contains(exec) ? 1 : 0, events, "history of execution " + exec + " of " + instance);
        }
    }

    // ------------------------------------------------------------------ tests

    /** keepLast=2 on four executions keeps 3 and 4; empty options then keep only the current execution. */
    @Test
    void test_prune_options_combinations() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String id = "prune-options-test";
        createCompletedChain(p, id, 4);
        assertEquals(List.of(1L, 2L, 3L, 4L), admin.listExecutions(id));

        PruneResult r = admin.pruneExecutions(id, keepLast(2));
        assertEquals(new PruneResult(1, 2, 2), r, "keepLast=2 deletes executions 1 and 2 with their events");
        assertExecutions(p, admin, id, List.of(3L, 4L), 4);

        PruneResult r2 = admin.pruneExecutions(id, new PruneOptions(Optional.empty(), Optional.empty()));
        assertEquals(new PruneResult(1, 1, 1), r2, "empty options delete every non-current execution");
        assertExecutions(p, admin, id, List.of(4L), 4);

        String id2 = "prune-options-empty";
        createCompletedChain(p, id2, 3);
        long current = admin.getInstanceInfo(id2).currentExecutionId();
        assertEquals(3, current);
        PruneResult r3 = admin.pruneExecutions(id2, new PruneOptions(Optional.empty(), Optional.empty()));
        assertEquals(new PruneResult(1, 2, 2), r3);
        assertExecutions(p, admin, id2, List.of(current), 3);

        InstanceInfo info = admin.getInstanceInfo(id2);
        assertEquals("Completed", info.status(), "pruning does not change the current execution");
        assertEquals(3, info.currentExecutionId());
        assertEquals(List.of(4L), admin.listExecutions(id), "the other instance is not touched");
    }

    /** The current execution always survives; unknown instances fail; None, 0 and 1 are the same on a Completed one. */
    @Test
    void test_prune_safety() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String id = "prune-safety-current";
        createCompletedChain(p, id, 3);

        PruneResult r = admin.pruneExecutions(id, keepLast(0));
        assertEquals(2, r.executionsDeleted(), "keepLast=0 still keeps the current execution");
        assertEquals(3, admin.getInstanceInfo(id).currentExecutionId());
        assertExecutions(p, admin, id, List.of(3L), 3);
        assertEquals(1, p.read(id).size(), "the current execution's history is intact");

        expectPermanentError("pruning an unknown instance",
                () -> admin.pruneExecutions("does-not-exist-prune", keepLast(1)));

        for (Integer keep : new Integer[] {null, 0, 1}) {
            String instance = "prune-terminal-" + keep;
            createCompletedChain(p, instance, 4);
            InstanceInfo info = admin.getInstanceInfo(instance);
            assertEquals("Completed", info.status(), "the chain ends Completed");
            assertEquals(4, info.currentExecutionId());

            PruneResult result = admin.pruneExecutions(instance, keepLast(keep));
            assertEquals(new PruneResult(1, 3, 3), result, "keepLast=" + keep + " deletes the 3 older executions");
            assertExecutions(p, admin, instance, List.of(4L), 4);
            assertEquals("Completed", admin.getInstanceInfo(instance).status());
        }
    }

    /** Bulk prune limited to two ids prunes exactly those two; a third instance keeps all four executions. */
    @Test
    void test_prune_bulk() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        for (int i = 0; i < 3; i++) {
            createCompletedChain(p, "prune-bulk-" + i, 4);
        }

        PruneResult r = admin.pruneExecutionsBulk(ids("prune-bulk-0", "prune-bulk-1"), keepLast(1));
        assertEquals(2, r.instancesProcessed(), "the two listed instances");
        assertEquals(6, r.executionsDeleted(), "three old executions of each");
        assertEquals(6, r.eventsDeleted(), "one event per deleted execution");

        assertExecutions(p, admin, "prune-bulk-0", List.of(4L), 4);
        assertExecutions(p, admin, "prune-bulk-1", List.of(4L), 4);
        assertExecutions(p, admin, "prune-bulk-2", List.of(1L, 2L, 3L, 4L), 4);
    }

    /** A still-running instance with three executions is pruned by the bulk call and keeps running. */
    @Test
    void test_prune_bulk_includes_running_instances() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        String id = "prune-running-inst";
        createExecutionChain(p, id, 3, ExecutionMetadata.RUNNING);
        assertEquals(List.of(1L, 2L, 3L), admin.listExecutions(id));
        InstanceInfo before = admin.getInstanceInfo(id);
        assertEquals("Running", before.status());
        assertEquals(3, before.currentExecutionId());

        PruneResult r = admin.pruneExecutionsBulk(ids(id), keepLast(1));
        assertEquals(1, r.instancesProcessed(), "the running instance is processed");
        assertEquals(2, r.executionsDeleted(), "executions 1 and 2");
        assertEquals(2, r.eventsDeleted());

        assertExecutions(p, admin, id, List.of(3L), 3);
        InstanceInfo after = admin.getInstanceInfo(id);
        assertEquals("Running", after.status(), "pruning leaves the running execution alone");
        assertEquals(3, after.currentExecutionId());
    }
}
