package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Empty;
import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.implementation.protobuf.TaskHubSidecarServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.pgdurable.postgres.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * A graceful stop with a real Durable Task for Java 1.5.0 worker in the middle of an activity: the sidecar hands out
 * nothing new, takes back the result the worker sends during the grace period and commits it, stops as soon as
 * nothing is outstanding, and after a restart the activity does not run again.
 */
class GracefulStopTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Far longer than the test needs: a stop that waited it out would show as not ending early. */
    private static final Duration LONG_GRACE = Duration.ofSeconds(30);

    private record Counters(AtomicInteger pack, AtomicInteger label, CountDownLatch packStarted,
                            CountDownLatch releasePack) {
        Counters() {
            this(new AtomicInteger(), new AtomicInteger(), new CountDownLatch(1), new CountDownLatch(1));
        }
    }

    /** Ship = Pack, then Label; Pack blocks until released. */
    private static UnaryOperator<DurableTaskGrpcWorkerBuilder> shipping(Counters c) {
        return b -> b
                .addOrchestration(orchestration("Ship", ctx -> {
                    String packed = ctx.callActivity("Pack", ctx.getInput(String.class), String.class).await();
                    ctx.complete(ctx.callActivity("Label", packed, String.class).await());
                }))
                .addActivity(activity("Pack", ctx -> {
                    c.pack.incrementAndGet();
                    c.packStarted.countDown();
                    try {
                        if (!c.releasePack.await(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("Pack was never released");
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("Pack interrupted", e);
                    }
                    return "packed " + ctx.getInput(String.class);
                }))
                .addActivity(activity("Label", ctx -> {
                    c.label.incrementAndGet();
                    return ctx.getInput(String.class) + ", labelled";
                }));
    }

    @Test
    void an_activity_mid_run_when_the_stop_begins_is_committed_in_the_grace_period_and_does_not_run_again() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_stop");
        SidecarConfig[] used = new SidecarConfig[1];
        try (SidecarHarness hub = new SidecarHarness("dt_stop", schema, c -> {
            used[0] = c.withShutdownGrace(LONG_GRACE);
            return used[0];
        })) {
            Counters c = new Counters();
            SidecarHarness.Worker worker = hub.startWorker(shipping(c));
            String id = hub.client.scheduleNewOrchestrationInstance("Ship", "order-15");
            assertTrue(c.packStarted.await(WAIT.toSeconds(), TimeUnit.SECONDS), "Pack never started");

            SidecarHarness.GracefulStop stop = hub.stopInBackground();
            assertTrue(hub.sidecar.awaitStopping(WAIT), "the stop never began");

            // During the grace period: nothing new gets in (a new worker's Hello, a client call).
            ManagedChannel probe = ManagedChannelBuilder.forAddress("127.0.0.1", hub.sidecar.port()).usePlaintext()
                    .build();
            try {
                StatusRuntimeException refused = assertThrows(StatusRuntimeException.class,
                        () -> TaskHubSidecarServiceGrpc.newBlockingStub(probe).withDeadlineAfter(10, TimeUnit.SECONDS)
                                .hello(Empty.getDefaultInstance()));
                assertEquals(Status.Code.UNAVAILABLE, refused.getStatus().getCode(), refused.toString());
                assertTrue(refused.getStatus().getDescription().contains("stopping"), refused.toString());
            } finally {
                probe.shutdownNow();
            }
            assertTrue(stop.running(), "the stop did not wait for the activity the worker holds");

            // The activity finishes inside the grace period; its result gets in and the stop ends early.
            c.releasePack.countDown();
            long stopMillis = stop.await(Duration.ofSeconds(20));
            assertTrue(stopMillis >= 0, "the stop did not end once nothing was outstanding");
            assertTrue(stopMillis < LONG_GRACE.toMillis() / 2,
                    "the stop took " + stopMillis + " ms: it waited out the grace period");
            // Label became due during the grace period (Pack's result woke the orchestration) and was not handed
            // out: only results get in then, no new work goes out.
            assertEquals(0, c.label.get(), "work was handed out during the grace period");
            worker.kill();

            // A restart on the same task hub: the orchestration carries on from Pack's committed result.
            try (SidecarServer again = SidecarServer.start(hub.provider, used[0].withPort(0))) {
                hub.startWorker(again.port(), shipping(c));
                ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", again.port())
                        .usePlaintext().build();
                try {
                    DurableTaskClient client = new DurableTaskGrpcClientBuilder().grpcChannel(channel).build();
                    OrchestrationMetadata done = client.waitForInstanceCompletion(id, WAIT, true);
                    assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
                    assertEquals("packed order-15, labelled", done.readOutputAs(String.class));
                } finally {
                    channel.shutdownNow();
                }
            }
            assertEquals(1, c.pack.get(), "Pack ran again after the restart: its result was lost in the stop");
            assertEquals(1, c.label.get());
            assertEquals(2, hub.provider.read(id).stream().filter(e -> e.type().equals("TaskCompleted")).count(),
                    "one completion each of Pack and Label");
        }
    }

    @Test
    void an_activity_still_running_when_the_grace_period_ends_is_abandoned_and_runs_again_after_the_restart() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_stop_late");
        SidecarConfig[] used = new SidecarConfig[1];
        try (SidecarHarness hub = new SidecarHarness("dt_stop_late", schema, c -> {
            used[0] = c.withShutdownGrace(Duration.ofMillis(500));
            return used[0];
        })) {
            Counters first = new Counters();
            SidecarHarness.Worker worker = hub.startWorker(shipping(first));
            String id = hub.client.scheduleNewOrchestrationInstance("Ship", "order-16");
            assertTrue(first.packStarted.await(WAIT.toSeconds(), TimeUnit.SECONDS), "Pack never started");

            long t0 = System.nanoTime();
            hub.sidecar.close(); // Pack stays blocked: the grace period runs out
            long stopMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(stopMillis < 10_000, "the stop took " + stopMillis + " ms with a 500 ms grace period");
            first.releasePack.countDown(); // its late result has nowhere to go
            worker.kill();

            Counters second = new Counters();
            second.releasePack.countDown();
            try (SidecarServer again = SidecarServer.start(hub.provider, used[0].withPort(0))) {
                hub.startWorker(again.port(), shipping(second));
                ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", again.port())
                        .usePlaintext().build();
                try {
                    DurableTaskClient client = new DurableTaskGrpcClientBuilder().grpcChannel(channel).build();
                    // Under the 30 s lease: the abandoned activity is free at once, not when its lease runs out.
                    OrchestrationMetadata done = client.waitForInstanceCompletion(id, Duration.ofSeconds(20), true);
                    assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
                    assertEquals("packed order-16, labelled", done.readOutputAs(String.class));
                } finally {
                    channel.shutdownNow();
                }
            }
            // Abandoned at the end of the grace period, not left to its 30 s lease: the restart ran it at once.
            assertEquals(1, first.pack.get());
            assertEquals(1, second.pack.get());
            assertEquals(1, hub.provider.read(id).stream().filter(e -> e.type().equals("ExecutionCompleted"))
                    .count());
        }
    }
}
