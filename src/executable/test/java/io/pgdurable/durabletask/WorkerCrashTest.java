package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import io.pgdurable.spi.Event;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A worker killed in the middle of an activity: its stream ends, the sidecar abandons what it held, a restarted
 * worker runs the activity again, and the orchestration completes exactly once even when the first attempt finishes
 * late.
 */
class WorkerCrashTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static SidecarHarness hub;

    @BeforeAll
    static void start() {
        hub = new SidecarHarness("dt_crash");
    }

    @AfterAll
    static void stop() {
        hub.close();
    }

    private static UnaryOperator<DurableTaskGrpcWorkerBuilder> worker(String name, CountDownLatch started,
                                                                    CountDownLatch release, AtomicInteger runs) {
        return b -> b
                .addOrchestration(orchestration("Charge", ctx ->
                        ctx.complete(ctx.callActivity("ChargeCard", ctx.getInput(String.class), String.class)
                                .await())))
                .addActivity(activity("ChargeCard", ctx -> {
                    runs.incrementAndGet();
                    started.countDown();
                    try {
                        release.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return "charged " + ctx.getInput(String.class) + " by " + name;
                }));
    }

    @Test
    void a_killed_workers_activity_runs_again_and_the_orchestration_completes_once() throws Exception {
        CountDownLatch firstStarted = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        AtomicInteger firstRuns = new AtomicInteger();
        SidecarHarness.Worker first = hub.startWorker(worker("first", firstStarted, releaseFirst, firstRuns));

        String id = hub.client.scheduleNewOrchestrationInstance("Charge", "order-7");
        assertTrue(firstStarted.await(30, TimeUnit.SECONDS), "the first worker never started the activity");
        first.kill();

        AtomicInteger secondRuns = new AtomicInteger();
        CountDownLatch open = new CountDownLatch(0);
        hub.startWorker(worker("second", new CountDownLatch(1), open, secondRuns));
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("charged order-7 by second", done.readOutputAs(String.class));

        // The first attempt now finishes; its result has nowhere to go (its connection is gone, its lease was
        // given up), so the history keeps exactly one completion.
        releaseFirst.countDown();
        first.thread.join(TimeUnit.SECONDS.toMillis(10));
        List<Event> history = hub.provider.read(id);
        assertEquals(1, history.stream().filter(e -> e.type().equals("TaskCompleted")).count());
        assertEquals(1, history.stream().filter(e -> e.type().equals("ExecutionCompleted")).count());
        assertEquals(1, firstRuns.get());
        assertEquals(1, secondRuns.get());
        assertEquals(OrchestrationRuntimeStatus.COMPLETED,
                hub.client.getInstanceMetadata(id, false).getRuntimeStatus());
    }
}
