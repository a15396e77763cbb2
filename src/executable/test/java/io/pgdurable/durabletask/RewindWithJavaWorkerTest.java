package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindInstanceRequest;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc;
import io.pgdurable.postgres.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Durable Task for Java 1.5.0 does not know rewind (its protocol has no ExecutionRewound event). A rewind request
 * for an instance it runs must leave the instance failed, answer within its bound, and not wedge the worker.
 * (Rewind with a worker that knows it: {@code JsSdkEndToEndTest}'s "rewind" scenario.)
 */
class RewindWithJavaWorkerTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void a_worker_that_cannot_rewind_leaves_the_instance_failed_and_keeps_working() throws Exception {
        try (SidecarHarness hub = new SidecarHarness("dt_rewind", TestDatabase.newSchemaName("dt_rewind"),
                c -> c)) {
            hub.startWorker(b -> b
                    .addOrchestration(orchestration("Boom", ctx -> {
                        throw new IllegalStateException("boom");
                    }))
                    .addOrchestration(orchestration("Echo", ctx -> ctx.complete(ctx.getInput(String.class)))));
            String id = "boom-" + UUID.randomUUID().toString().substring(0, 8);
            hub.client.scheduleNewOrchestrationInstance("Boom", null, id);
            OrchestrationMetadata failed = hub.client.waitForInstanceCompletion(id, WAIT, true);
            assertEquals(OrchestrationRuntimeStatus.FAILED, failed.getRuntimeStatus());

            ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", hub.sidecar.port())
                    .usePlaintext().build();
            try {
                long t0 = System.nanoTime();
                TaskHubSidecarServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                        .rewindInstance(RewindInstanceRequest.newBuilder().setInstanceId(id).build());
                long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                long bound = InstanceClient.REWIND_WAIT.toMillis();
                assertTrue(tookMillis >= bound - 100 && tookMillis < bound + 5_000,
                        "the rewind call took " + tookMillis + " ms; it waits " + bound + " ms for a rewind that "
                                + "never comes");
            } finally {
                channel.shutdownNow();
            }
            OrchestrationMetadata after = hub.client.getInstanceMetadata(id, true);
            assertEquals(OrchestrationRuntimeStatus.FAILED, after.getRuntimeStatus());
            assertEquals(failed.getFailureDetails().getErrorMessage(), after.getFailureDetails().getErrorMessage());

            String echo = hub.client.scheduleNewOrchestrationInstance("Echo", "still working");
            OrchestrationMetadata done = hub.client.waitForInstanceCompletion(echo, WAIT, true);
            assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
            assertEquals("still working", done.readOutputAs(String.class));
        }
    }
}
