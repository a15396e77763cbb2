package io.pgdurable.conformance;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.ExecutionInfo;
import io.pgdurable.spi.ProviderAdmin.InstanceInfo;
import io.pgdurable.spi.ProviderAdmin.QueueDepths;
import io.pgdurable.spi.ProviderAdmin.SystemMetrics;
import io.pgdurable.spi.SystemStats;
import io.pgdurable.spi.WorkItem;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code management} (CONTRACT §7.8, §3, §2.17): the admin facet lists and inspects instances,
 * executions, metrics and queue depths, and {@code getInstanceStats} reports history, carried-over events and
 * key-value usage of the current execution.
 */
public abstract class ManagementTests extends ConformanceTestBase {

    /** The admin facet, which these tests require. */
    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> admin = p.asManagementCapability();
        assertNotNull(admin, "asManagementCapability returned null instead of an Optional");
        assertTrue(admin.isPresent(), "the provider must offer the management capability");
        return admin.get();
    }

    /** Enqueues a start, fetches it and acks {@code delta} under execution 1 with {@code metadata}. */
    protected static void startAndAck(OrchestrationProvider p, String instance, List<Event> delta,
                                      ExecutionMetadata metadata) {
        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start of " + instance);
        assertEquals(instance, f.item().instance(), "fetched another instance");
        ack(p, f.lockToken(), 1, delta, metadata);
    }

    /** Pokes the instance, fetches the turn and acks {@code delta} under execution 1 with {@code metadata}. */
    protected static void pokeAndAck(OrchestrationProvider p, String instance, List<Event> delta,
                                     ExecutionMetadata metadata) {
        p.enqueueForOrchestrator(poke(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the poke of " + instance);
        assertEquals(instance, f.item().instance(), "fetched another instance");
        ack(p, f.lockToken(), 1, delta, metadata);
    }

    /** getInstanceStats, which must be present. */
    protected static SystemStats requiredStats(OrchestrationProvider p, String instance) {
        Optional<SystemStats> stats = p.getInstanceStats(instance);
        assertNotNull(stats, "getInstanceStats returned null instead of an Optional");
        assertTrue(stats.isPresent(), "instance " + instance + " exists, so it has stats");
        return stats.get();
    }

    protected static long utf8Length(String s) {
        return s.getBytes(UTF_8).length;
    }

    protected static ExecutionMetadata completed(String output) {
        return ExecutionMetadata.empty().withStatus(ExecutionMetadata.COMPLETED, output);
    }

    /** Three created instances are all listed. */
    @Test
    void test_list_instances() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        for (int i = 0; i < 3; i++) {
            createInstance(p, "mgmt-inst-" + i);
        }
        List<String> instances = admin.listInstances();
        for (int i = 0; i < 3; i++) {
            assertTrue(instances.contains("mgmt-inst-" + i), "mgmt-inst-" + i + " is listed: " + instances);
        }
        assertEquals(3, instances.size(), "fresh storage holds exactly the three instances: " + instances);
    }

    /** An instance acked as Completed is listed under Completed; a running one is not. */
    @Test
    void test_list_instances_by_status() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        startAndAck(p, "mgmt-completed", List.of(startedEvent(1)), testOrchMetadata().withStatus(
                ExecutionMetadata.COMPLETED, "done"));
        createInstance(p, "mgmt-running");

        List<String> completed = admin.listInstancesByStatus(ExecutionMetadata.COMPLETED);
        assertTrue(completed.contains("mgmt-completed"), "the completed instance is listed: " + completed);
        assertFalse(completed.contains("mgmt-running"), "a running instance is not Completed: " + completed);

        List<String> running = admin.listInstancesByStatus(ExecutionMetadata.RUNNING);
        assertTrue(running.contains("mgmt-running"), "the running instance is listed as Running: " + running);
        assertFalse(running.contains("mgmt-completed"), "the completed instance is not Running: " + running);
    }

    /** After the first ack the instance has execution 1. */
    @Test
    void test_list_executions() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        startAndAck(p, "mgmt-multi-exec", List.of(startedEvent(1)), ExecutionMetadata.empty());

        List<Long> executions = admin.listExecutions("mgmt-multi-exec");
        assertEquals(List.of(1L), executions, "the instance has execution 1 only");
    }

    /** Name and version come from the ack metadata; the current execution is 1. */
    @Test
    void test_get_instance_info() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        startAndAck(p, "mgmt-info", List.of(Events.orchestrationStarted(1, "InfoOrch", "2.0.0", "test")),
                ExecutionMetadata.of("InfoOrch", "2.0.0"));

        InstanceInfo info = admin.getInstanceInfo("mgmt-info");
        assertNotNull(info, "getInstanceInfo returned null");
        assertEquals("mgmt-info", info.instanceId());
        assertEquals("InfoOrch", info.orchestrationName());
        assertEquals("2.0.0", info.orchestrationVersion());
        assertEquals(1, info.currentExecutionId());
    }

    /** Execution 1 acked as Completed with output "result" reports both. */
    @Test
    void test_get_execution_info() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        startAndAck(p, "mgmt-exec-info", List.of(startedEvent(1)), completed("result"));

        ExecutionInfo info = admin.getExecutionInfo("mgmt-exec-info", 1);
        assertNotNull(info, "getExecutionInfo returned null");
        assertEquals(1, info.executionId());
        assertEquals(ExecutionMetadata.COMPLETED, info.status());
        assertEquals(Optional.of("result"), info.output());
        assertEquals(1, info.eventCount(), "execution 1 holds one event");
    }

    /** Creating an instance raises the instance total; the stored event shows in the event total. */
    @Test
    void test_get_system_metrics() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        SystemMetrics before = admin.getSystemMetrics();
        assertNotNull(before, "getSystemMetrics returned null");

        createInstance(p, "mgmt-metrics");

        SystemMetrics after = admin.getSystemMetrics();
        assertEquals(before.totalInstances() + 1, after.totalInstances(), "one more instance");
        assertTrue(after.totalEvents() > 0, "the OrchestrationStarted event is counted: " + after);
        assertTrue(after.totalExecutions() >= 1, "the instance has an execution: " + after);
    }

    /** Enqueueing a start raises the orchestrator queue depth by one. */
    @Test
    void test_get_queue_depths() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        QueueDepths before = admin.getQueueDepths();
        assertNotNull(before, "getQueueDepths returned null");

        p.enqueueForOrchestrator(startItem("mgmt-queue"), null);

        QueueDepths after = admin.getQueueDepths();
        assertEquals(before.orchestratorQueue() + 1, after.orchestratorQueue(), "one more orchestrator message");
        assertEquals(before.workerQueue(), after.workerQueue(), "the worker queue is unchanged");
    }

    /** An unknown instance has no stats (and no error). */
    @Test
    void test_get_instance_stats_nonexistent() {
        OrchestrationProvider p = newProvider();
        Optional<SystemStats> stats = p.getInstanceStats("no-such-instance");
        assertNotNull(stats, "getInstanceStats returned null instead of an Optional");
        assertTrue(stats.isEmpty(), "unknown instance, got " + stats);
    }

    /** A freshly started instance: one event of its stored size, no key-value data, nothing carried over. */
    @Test
    void test_get_instance_stats_history() {
        OrchestrationProvider p = newProvider();
        Event started = startedEvent(1);
        startAndAck(p, "stats-hist", List.of(started), testOrchMetadata());

        SystemStats stats = requiredStats(p, "stats-hist");
        assertEquals(1, stats.historyEventCount(), "one event in the current execution");
        assertTrue(stats.historySizeBytes() > 0, "history has a size: " + stats);
        assertEquals(utf8Length(started.data()), stats.historySizeBytes(),
                "the size is the byte length of the stored event JSON");
        assertEquals(0, stats.kvUserKeyCount(), "no key-value keys");
        assertEquals(0, stats.kvTotalValueBytes(), "no key-value bytes");
        assertEquals(0, stats.queuePendingCount(), "no carried-over events");
    }

    /** Two keys (3 and 5 bytes) set in a completing ack count as 2 keys and 8 bytes. */
    @Test
    void test_get_instance_stats_kv() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "stats-kv");
        pokeAndAck(p, "stats-kv", List.of(
                Events.keyValueSet(100, "k1", "aaa", 0),
                Events.keyValueSet(101, "k2", "bbbbb", 0),
                Events.orchestrationCompleted(102, "done")), completed("done"));

        SystemStats stats = requiredStats(p, "stats-kv");
        assertEquals(2, stats.kvUserKeyCount(), "two keys");
        assertEquals(utf8Length("aaa") + utf8Length("bbbbb"), stats.kvTotalValueBytes(), "3 + 5 bytes");
        assertEquals(8, stats.kvTotalValueBytes());
    }

    /** An OrchestrationStarted carrying three events reports three pending events. */
    @Test
    void test_get_instance_stats_carry_forward() {
        OrchestrationProvider p = newProvider();
        startAndAck(p, "cf-stats", List.of(Events.orchestrationStarted(1, TEST_ORCH, TEST_VERSION, "{}", List.of(
                        new WorkItem.CarriedEvent("raised-1", "{\"data\":\"a\"}"),
                        new WorkItem.CarriedEvent("raised-2", "{\"data\":\"b\"}"),
                        new WorkItem.CarriedEvent("raised-3", "{\"data\":\"c\"}")))),
                testOrchMetadata());

        SystemStats stats = requiredStats(p, "cf-stats");
        assertEquals(3, stats.queuePendingCount(), "three carried-over events");
        assertEquals(1, stats.historyEventCount(), "one event in the current execution");
        assertTrue(stats.historySizeBytes() > 0, "history has a size: " + stats);
        assertEquals(0, stats.kvUserKeyCount(), "no key-value keys");
    }

    /** Keys written by a non-terminal ack live in the delta and are counted from there: 2 keys, 3 + 6 bytes. */
    @Test
    void test_get_instance_stats_kv_delta_only() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-delta-stats");
        pokeAndAck(p, "kv-delta-stats", List.of(
                Events.keyValueSet(100, "dk1", "xxx", 0),
                Events.keyValueSet(101, "dk2", "yyyyyy", 0),
                Events.activityScheduled(102, "Noop", "{}")), ExecutionMetadata.empty());

        SystemStats stats = requiredStats(p, "kv-delta-stats");
        assertEquals(2, stats.kvUserKeyCount(), "two keys from the delta");
        assertEquals(9, stats.kvTotalValueBytes(), "3 + 6 bytes from the delta");
        assertEquals(0, stats.queuePendingCount(), "no carried-over events");
        assertEquals(4, stats.historyEventCount(), "started + two sets + scheduled");
    }

    /** Delta phase: 2 keys, 5 bytes; after overwriting one key (3 -> 5 bytes) and completing: 2 keys, 7 bytes. */
    @Test
    void test_get_instance_stats_kv_merged() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-merged-stats");
        pokeAndAck(p, "kv-merged-stats", List.of(
                Events.keyValueSet(100, "mk1", "aaa", 0),
                Events.keyValueSet(101, "mk2", "bb", 0),
                Events.activityScheduled(102, "Noop", "{}")), ExecutionMetadata.empty());

        SystemStats delta = requiredStats(p, "kv-merged-stats");
        assertEquals(2, delta.kvUserKeyCount(), "delta phase: two keys");
        assertEquals(5, delta.kvTotalValueBytes(), "delta phase: 3 + 2 bytes");

        pokeAndAck(p, "kv-merged-stats", List.of(
                Events.keyValueSet(200, "mk1", "zzzzz", 1),
                Events.orchestrationCompleted(201, "done")), completed("done"));

        SystemStats merged = requiredStats(p, "kv-merged-stats");
        assertEquals(2, merged.kvUserKeyCount(), "after the merge: still two keys");
        assertEquals(7, merged.kvTotalValueBytes(), "after the merge: 5 + 2 bytes");
    }
}
