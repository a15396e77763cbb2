package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.eventually;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.UnknownFieldSet;
import com.microsoft.durabletask.NewOrchestrationInstanceOptions;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.OrchestrationStatusQuery;
import com.microsoft.durabletask.OrchestrationStatusQueryResult;
import com.microsoft.durabletask.PurgeInstanceCriteria;
import com.microsoft.durabletask.implementation.protobuf.OrchestratorService.TerminateRequest;
import com.microsoft.durabletask.implementation.protobuf.TaskHubSidecarServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.pgdurable.postgres.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Terminate, suspend/resume, waits woken by notifications, query with continuation, purge by id and filter. */
class InstanceManagementTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static SidecarHarness hub;

    @BeforeAll
    static void start() {
        // A 30 s fallback re-read: every wait below that returns sooner was woken by a notification.
        hub = new SidecarHarness("dt_mgmt", TestDatabase.newSchemaName("dt_mgmt"), c -> c.withWaitFallback(WAIT));
        hub.startWorker(b -> b
                .addOrchestration(orchestration("WaitEvent", ctx ->
                        ctx.complete("got " + ctx.waitForExternalEvent("go", String.class).await())))
                .addOrchestration(orchestration("ParentOfWaiter", ctx ->
                        ctx.complete(ctx.callSubOrchestrator("WaitEvent", null, ctx.getInstanceId() + "-child",
                                String.class).await())))
                .addOrchestration(orchestration("Echo", ctx -> ctx.complete(ctx.getInput(String.class)))));
    }

    @AfterAll
    static void stop() {
        hub.close();
    }

    private static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private static OrchestrationRuntimeStatus status(String id) {
        return hub.client.getInstanceMetadata(id, false).getRuntimeStatus();
    }

    @Test
    void terminate_ends_a_running_instance_with_the_given_output() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceStart(id, WAIT, false);
        hub.client.terminate(id, "stopped by test");
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals(OrchestrationRuntimeStatus.TERMINATED, done.getRuntimeStatus());
        assertEquals("stopped by test", done.readOutputAs(String.class));
    }

    @Test
    void terminate_is_not_recursive_unless_asked() throws Exception {
        String parent = unique("p");
        hub.client.scheduleNewOrchestrationInstance("ParentOfWaiter",
                new NewOrchestrationInstanceOptions().setInstanceId(parent));
        hub.client.waitForInstanceStart(parent + "-child", WAIT, false);
        hub.client.terminate(parent, null);
        assertEquals(OrchestrationRuntimeStatus.TERMINATED,
                hub.client.waitForInstanceCompletion(parent, WAIT, false).getRuntimeStatus());
        assertEquals(OrchestrationRuntimeStatus.RUNNING, status(parent + "-child"));

        // A newer client's TerminateRequest.recursive (field 3) reaches the children.
        String parent2 = unique("p");
        hub.client.scheduleNewOrchestrationInstance("ParentOfWaiter",
                new NewOrchestrationInstanceOptions().setInstanceId(parent2));
        hub.client.waitForInstanceStart(parent2 + "-child", WAIT, false);
        ManagedChannel raw = ManagedChannelBuilder.forAddress("127.0.0.1", hub.sidecar.port()).usePlaintext()
                .build();
        try {
            TaskHubSidecarServiceGrpc.newBlockingStub(raw).terminateInstance(TerminateRequest.newBuilder()
                    .setInstanceId(parent2)
                    .setUnknownFields(UnknownFieldSet.newBuilder().addField(3,
                            UnknownFieldSet.Field.newBuilder().addVarint(1).build()).build())
                    .build());
        } finally {
            raw.shutdownNow();
        }
        assertEquals(OrchestrationRuntimeStatus.TERMINATED,
                hub.client.waitForInstanceCompletion(parent2 + "-child", WAIT, false).getRuntimeStatus());
        assertEquals(OrchestrationRuntimeStatus.TERMINATED,
                hub.client.waitForInstanceCompletion(parent2, WAIT, false).getRuntimeStatus());
        hub.client.raiseEvent(parent + "-child", "go", "late");
        hub.client.waitForInstanceCompletion(parent + "-child", WAIT, false);
    }

    @Test
    void a_suspended_instance_keeps_its_events_until_resumed() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceStart(id, WAIT, false);
        hub.client.suspendInstance(id, "maintenance");
        assertTrue(eventually(WAIT, () -> status(id) == OrchestrationRuntimeStatus.SUSPENDED));
        hub.client.raiseEvent(id, "go", "while suspended");
        // The event is recorded, but the orchestration does not act on it while suspended.
        assertTrue(eventually(WAIT, () -> hub.provider.read(id).stream()
                .anyMatch(e -> e.type().equals("EventRaised"))));
        assertEquals(OrchestrationRuntimeStatus.SUSPENDED, status(id));
        hub.client.resumeInstance(id, "done");
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("got while suspended", done.readOutputAs(String.class));
    }

    @Test
    void a_wait_is_woken_by_the_turn_that_completes_the_instance() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceStart(id, WAIT, false);
        CompletableFuture<OrchestrationMetadata> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return hub.client.waitForInstanceCompletion(id, WAIT, true);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException(e);
            }
        });
        hub.client.raiseEvent(id, "go", "now");
        long raised = System.nanoTime();
        OrchestrationMetadata done = waiting.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - raised);
        assertEquals("got now", done.readOutputAs(String.class));
        assertTrue(tookMs < 10_000, "woken after " + tookMs + " ms; the fallback re-read is 30 s");
    }

    @Test
    void a_wait_ends_at_the_client_deadline() {
        String id = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        assertThrows(java.util.concurrent.TimeoutException.class,
                () -> hub.client.waitForInstanceCompletion(id, Duration.ofMillis(500), false));
        hub.client.raiseEvent(id, "go", "x");
    }

    @Test
    void query_pages_with_a_continuation_token_and_filters() throws Exception {
        String prefix = unique("q") + "-";
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(hub.client.scheduleNewOrchestrationInstance("Echo",
                    new NewOrchestrationInstanceOptions().setInstanceId(prefix + i).setInput("v" + i)));
        }
        String running = hub.client.scheduleNewOrchestrationInstance("WaitEvent",
                new NewOrchestrationInstanceOptions().setInstanceId(prefix + "running"));
        for (String id : ids) {
            hub.client.waitForInstanceCompletion(id, WAIT, false);
        }
        hub.client.waitForInstanceStart(running, WAIT, false);

        List<String> seen = new ArrayList<>();
        List<Integer> pageSizes = new ArrayList<>();
        String token = null;
        do {
            OrchestrationStatusQueryResult page = hub.client.queryInstances(new OrchestrationStatusQuery()
                    .setInstanceIdPrefix(prefix).setMaxInstanceCount(2).setFetchInputsAndOutputs(true)
                    .setRuntimeStatusList(List.of(OrchestrationRuntimeStatus.COMPLETED))
                    .setContinuationToken(token));
            pageSizes.add(page.getOrchestrationState().size());
            for (OrchestrationMetadata m : page.getOrchestrationState()) {
                seen.add(m.getInstanceId());
                assertEquals("v" + m.getInstanceId().substring(prefix.length()), m.readOutputAs(String.class));
            }
            token = page.getContinuationToken();
        } while (token != null && !token.isEmpty() && pageSizes.size() < 10);
        assertEquals(ids, seen);
        assertEquals(List.of(2, 2, 1), pageSizes.subList(0, 3));

        OrchestrationStatusQueryResult runningOnly = hub.client.queryInstances(new OrchestrationStatusQuery()
                .setInstanceIdPrefix(prefix).setRuntimeStatusList(List.of(OrchestrationRuntimeStatus.RUNNING)));
        assertEquals(List.of(running), runningOnly.getOrchestrationState().stream()
                .map(OrchestrationMetadata::getInstanceId).toList());
        OrchestrationStatusQueryResult future = hub.client.queryInstances(new OrchestrationStatusQuery()
                .setInstanceIdPrefix(prefix).setCreatedTimeFrom(Instant.now().plusSeconds(3600)));
        assertTrue(future.getOrchestrationState().isEmpty());
        hub.client.raiseEvent(running, "go", "x");
    }

    @Test
    void delete_task_hub_removes_every_instance_and_the_hub_keeps_working() throws Exception {
        String finished = hub.client.scheduleNewOrchestrationInstance("Echo", "a");
        String running = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceCompletion(finished, WAIT, false);
        hub.client.waitForInstanceStart(running, WAIT, false);
        hub.client.deleteTaskHub();
        assertFalse(hub.client.getInstanceMetadata(finished, false).isInstanceFound());
        assertFalse(hub.client.getInstanceMetadata(running, false).isInstanceFound());
        hub.client.createTaskHub(false);
        String after = hub.client.scheduleNewOrchestrationInstance("Echo", "b");
        assertEquals("b", hub.client.waitForInstanceCompletion(after, WAIT, true).readOutputAs(String.class));
    }

    @Test
    void purge_by_id_and_by_filter_deletes_only_finished_instances() throws Exception {
        Instant before = Instant.now().minusSeconds(1);
        String prefix = unique("purge") + "-";
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            ids.add(hub.client.scheduleNewOrchestrationInstance("Echo",
                    new NewOrchestrationInstanceOptions().setInstanceId(prefix + i).setInput("x")));
        }
        String running = hub.client.scheduleNewOrchestrationInstance("WaitEvent",
                new NewOrchestrationInstanceOptions().setInstanceId(prefix + "running"));
        for (String id : ids) {
            hub.client.waitForInstanceCompletion(id, WAIT, false);
        }
        hub.client.waitForInstanceStart(running, WAIT, false);

        assertEquals(1, hub.client.purgeInstance(ids.get(0)).getDeletedInstanceCount());
        assertFalse(hub.client.getInstanceMetadata(ids.get(0), false).isInstanceFound());
        assertEquals(0, hub.client.purgeInstance(ids.get(0)).getDeletedInstanceCount());
        // 1.5.0's DurableTaskClient.purgeInstance documents 0 purged for an instance not in a terminal state.
        assertEquals(0, hub.client.purgeInstance(running).getDeletedInstanceCount());
        assertTrue(hub.client.getInstanceMetadata(running, false).isInstanceFound());

        int purged = hub.client.purgeInstances(new PurgeInstanceCriteria().setCreatedTimeFrom(before)
                .setRuntimeStatusList(List.of(OrchestrationRuntimeStatus.COMPLETED))).getDeletedInstanceCount();
        assertTrue(purged >= 3, "purged " + purged);
        for (String id : ids) {
            assertFalse(hub.client.getInstanceMetadata(id, false).isInstanceFound(), id);
        }
        assertTrue(hub.client.getInstanceMetadata(running, false).isInstanceFound());
        hub.client.raiseEvent(running, "go", "x");
    }

    /**
     * Durable Task for Java never sets the purge request's {@code recursive} field, so its purge keeps the cascade it
     * always had here: the sub-orchestration goes with its parent (the JavaScript SDK's non-recursive purge keeps it,
     * scenarios.js "purge").
     */
    @Test
    void a_java_clients_purge_takes_the_sub_orchestrations_with_the_parent() throws Exception {
        String parent = hub.client.scheduleNewOrchestrationInstance("ParentOfWaiter",
                new NewOrchestrationInstanceOptions().setInstanceId(unique("purge-family")));
        String child = parent + "-child";
        hub.client.waitForInstanceStart(child, WAIT, false);
        hub.client.raiseEvent(child, "go", "x");
        assertEquals("got x", hub.client.waitForInstanceCompletion(parent, WAIT, true).readOutputAs(String.class));

        assertEquals(2, hub.client.purgeInstance(parent).getDeletedInstanceCount());
        assertFalse(hub.client.getInstanceMetadata(parent, false).isInstanceFound());
        assertFalse(hub.client.getInstanceMetadata(child, false).isInstanceFound());
    }
}
