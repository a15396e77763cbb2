package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.Task;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** Two sidecars on one database and schema: they share the work, and a client of one sees turns of the other. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TwoSidecarsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final CountDownLatch RENDEZVOUS = new CountDownLatch(2);
    private static SidecarHarness a;
    private static PostgresProvider providerB;
    private static SidecarServer sidecarB;
    private static ManagedChannel clientChannelB;
    private static DurableTaskClient clientB;

    @BeforeAll
    static void start() {
        // Both sidecars re-read waiting clients only every 30 s: faster answers come from notifications.
        a = new SidecarHarness("dt_two", TestDatabase.newSchemaName("dt_two"), c -> c.withWaitFallback(WAIT));
        providerB = PostgresProvider.create(TestDatabase.config(a.schema).poolSize(8).longPolling(true).build());
        sidecarB = SidecarServer.start(providerB, SidecarConfig.defaults(a.schema).withPort(0)
                .withStatusJdbcUrl(TestDatabase.url()).withWaitFallback(WAIT)
                .withShutdownGrace(Duration.ofSeconds(1)));
        clientChannelB = ManagedChannelBuilder.forAddress("127.0.0.1", sidecarB.port()).usePlaintext().build();
        clientB = new DurableTaskGrpcClientBuilder().grpcChannel(clientChannelB).build();
    }

    @AfterAll
    static void stop() {
        clientChannelB.shutdownNow();
        sidecarB.close();
        providerB.close();
        a.close();
    }

    private static UnaryOperator<DurableTaskGrpcWorkerBuilder> worker(String name) {
        return b -> b
                .addOrchestration(orchestration("Pair", ctx -> {
                    List<Task<String>> both = new ArrayList<>();
                    both.add(ctx.callActivity("Meet", null, String.class));
                    both.add(ctx.callActivity("Meet", null, String.class));
                    ctx.complete(String.join(",", new TreeSet<>(ctx.allOf(both).await())));
                }))
                .addOrchestration(orchestration("Echo", ctx -> ctx.complete(ctx.getInput(String.class))))
                .addActivity(activity("Meet", ctx -> {
                    // Each 1.5.0 worker runs one activity at a time: both can only meet here if the two sidecars
                    // each handed one of them to their own worker.
                    RENDEZVOUS.countDown();
                    try {
                        return RENDEZVOUS.await(30, TimeUnit.SECONDS) ? name : name + " (alone)";
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }));
    }

    @Test
    @Order(1)
    void a_client_of_one_sidecar_is_woken_by_turns_committed_by_the_other() throws Exception {
        a.startWorker(worker("worker-a")); // only sidecar A has a worker yet
        String id = clientB.scheduleNewOrchestrationInstance("Echo", "across");
        long started = System.nanoTime();
        OrchestrationMetadata done = clientB.waitForInstanceCompletion(id, WAIT, true);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertEquals("across", done.readOutputAs(String.class));
        assertTrue(tookMs < 10_000, "woken after " + tookMs + " ms; without the status channel it takes 30 s");
    }

    @Test
    @Order(2)
    void two_sidecars_share_the_work_of_one_orchestration() throws Exception {
        a.startWorker(sidecarB.port(), worker("worker-b"));
        String id = a.client.scheduleNewOrchestrationInstance("Pair");
        OrchestrationMetadata done = clientB.waitForInstanceCompletion(id, WAIT, true);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("worker-a,worker-b", done.readOutputAs(String.class));
    }
}
