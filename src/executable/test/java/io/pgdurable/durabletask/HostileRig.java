package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.StringValue;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.pgdurable.durabletask.protocol.OrchestratorService.CompleteOrchestrationAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.CreateInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetInstanceRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc.TaskHubSidecarServiceBlockingStub;
import io.pgdurable.postgres.TestDatabase;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A sidecar on a fresh schema for hostile requests: small limits (so that tests reach them cheaply), a lease long
 * enough that no renewal writes a row while a test compares snapshots, and a seeded hub: one finished instance
 * ({@value #DONE}) and one whose start waits in the queue ({@value #QUEUED}), so that a request that wrongly stores
 * or deletes something has rows to change.
 */
final class HostileRig implements AutoCloseable {
    static final String DONE = "seed-done";
    static final String QUEUED = "seed-queued";
    static final Duration WAIT = Duration.ofSeconds(30);
    static final RequestLimits LIMITS = RequestLimits.DEFAULTS.withMaxMessageBytes(1024 * 1024)
            .withMaxIdLength(200).withMaxNameLength(200).withMaxActionsPerTurn(5_000).withMaxWorkerStreams(20);

    final SidecarHarness hub;
    final ManagedChannel channel;
    /** Fetch lanes of other sidecars in this JVM (earlier test classes), which are not this sidecar's to count. */
    private final java.util.Set<Thread> otherLanes = lanes();

    HostileRig(String prefix) throws InterruptedException {
        hub = new SidecarHarness(prefix, TestDatabase.newSchemaName(prefix),
                c -> c.withLockTimeout(Duration.ofMinutes(5)).withLimits(LIMITS));
        channel = ManagedChannelBuilder.forAddress("127.0.0.1", hub.sidecar.port()).usePlaintext()
                .maxInboundMessageSize(8 * 1024 * 1024).build();
        seed();
    }

    TaskHubSidecarServiceBlockingStub timed() {
        return TaskHubSidecarServiceGrpc.newBlockingStub(channel).withDeadlineAfter(WAIT.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    SchemaRows rows() {
        return SchemaRows.of(hub.schema);
    }

    private void seed() throws InterruptedException {
        try (RawStream worker = new RawStream(hub.sidecar.port(), GetWorkItemsRequest.newBuilder()
                .setMaxConcurrentOrchestrationWorkItems(1).setMaxConcurrentActivityWorkItems(1).build())) {
            timed().startInstance(CreateInstanceRequest.newBuilder().setName("Seed").setInstanceId(DONE)
                    .setInput(StringValue.of("\"in\"")).build());
            WorkItem item = worker.next();
            assertEquals(DONE, item.getOrchestratorRequest().getInstanceId());
            timed().completeOrchestratorTask(OrchestratorResponse.newBuilder().setInstanceId(DONE)
                    .setCompletionToken(item.getCompletionToken())
                    .addActions(OrchestratorAction.newBuilder().setId(0).setCompleteOrchestration(
                            CompleteOrchestrationAction.newBuilder().setResult(StringValue.of("\"out\""))
                                    .setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED)))
                    .build());
            assertEquals(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED, timed().waitForInstanceCompletion(
                    GetInstanceRequest.newBuilder().setInstanceId(DONE).build()).getOrchestrationState()
                    .getOrchestrationStatus());
        }
        awaitNoWorkerStreams();
        timed().startInstance(CreateInstanceRequest.newBuilder().setName("Seed").setInstanceId(QUEUED)
                .setInput(StringValue.of("\"in\"")).build());
    }

    /** Waits until no worker stream is open and no fetch lane of one still runs (its fetch could still take work). */
    void awaitNoWorkerStreams() throws InterruptedException {
        assertTrue(SidecarHarness.eventually(WAIT, () -> hub.sidecar.openWorkerStreams() == 0
                        && laneThreads() == 0),
                "worker streams still open: " + hub.sidecar.openWorkerStreams() + ", lanes " + laneThreads());
    }

    /** Fetch lanes of this sidecar's worker streams still running. */
    long laneThreads() {
        return lanes().stream().filter(t -> !otherLanes.contains(t)).count();
    }

    private static java.util.Set<Thread> lanes() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive()
                && (t.getName().startsWith("pgdurable-dt-orchestrations-")
                || t.getName().startsWith("pgdurable-dt-activities-")))
                .collect(java.util.stream.Collectors.toSet());
    }

    /** A real Durable Task for Java worker runs a new orchestration (and the seeded one) to completion. */
    void assertAWellFormedOrchestrationCompletes() {
        hub.startWorker(b -> b
                .addOrchestration(orchestration("Hello", ctx -> ctx.complete("hello " + ctx.getInput(String.class))))
                .addOrchestration(orchestration("Seed", ctx -> ctx.complete("seeded"))));
        String id = hub.client.scheduleNewOrchestrationInstance("Hello", "after");
        OrchestrationMetadata done;
        try {
            done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("a well-formed orchestration did not complete within " + WAIT, e);
        }
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("hello after", done.readOutputAs(String.class));
        assertFalse(done.isRunning());
    }

    /**
     * As {@link #assertAWellFormedOrchestrationCompletes}, with a worker that serves any amount of stray work the
     * barrage left queued (fuzzed starts, entity signals): it completes every turn it gets and leaves entity batches
     * and activities unanswered, which a worker of one slot at a time would wait behind.
     */
    void assertAWellFormedOrchestrationCompletesAmongStrayWork() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("Hello", "after");
        try (RawStream worker = new RawStream(hub.sidecar.port(), GetWorkItemsRequest.newBuilder()
                .setMaxConcurrentOrchestrationWorkItems(100).setMaxConcurrentActivityWorkItems(100).build())) {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                WorkItem item = worker.poll(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                assertTrue(item != null, "the turn of " + id + " did not come within " + WAIT);
                if (!item.hasOrchestratorRequest()) {
                    continue;
                }
                String instance = item.getOrchestratorRequest().getInstanceId();
                CompleteOrchestrationAction.Builder end = CompleteOrchestrationAction.newBuilder()
                        .setOrchestrationStatus(OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED);
                if (instance.equals(id)) {
                    end.setResult(StringValue.of("\"hello after\""));
                }
                timed().completeOrchestratorTask(OrchestratorResponse.newBuilder().setInstanceId(instance)
                        .setCompletionToken(item.getCompletionToken())
                        .addActions(OrchestratorAction.newBuilder().setId(0).setCompleteOrchestration(end)).build());
                if (instance.equals(id)) {
                    break;
                }
            }
        }
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("hello after", done.readOutputAs(String.class));
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        hub.close();
    }
}
