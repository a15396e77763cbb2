package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import io.pgdurable.spi.Event;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The first end-to-end path: a real Durable Task worker and client run an activity chain through the sidecar. */
class ActivityChainTest {
    private static SidecarHarness hub;

    @BeforeAll
    static void start() {
        hub = new SidecarHarness("dt_chain");
        hub.startWorker(b -> b
                .addOrchestration(orchestration("Greetings", ctx -> {
                    String a = ctx.callActivity("Hello", "Tokyo", String.class).await();
                    String b2 = ctx.callActivity("Hello", "London", String.class).await();
                    String c = ctx.callActivity("Hello", "Seattle", String.class).await();
                    ctx.complete(a + " " + b2 + " " + c);
                }))
                .addActivity(activity("Hello", ctx -> "Hello, " + ctx.getInput(String.class) + "!")));
    }

    @AfterAll
    static void stop() {
        hub.close();
    }

    @Test
    void activity_chain_completes_with_the_expected_output() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("Greetings");
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, Duration.ofSeconds(30), true);

        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("Hello, Tokyo! Hello, London! Hello, Seattle!", done.readOutputAs(String.class));
        assertEquals("Greetings", done.getName());

        // The history is Durable Task events stored opaquely: three scheduled, three completed, one completion.
        List<Event> history = hub.provider.read(id);
        assertEquals(3, history.stream().filter(e -> e.type().equals("TaskScheduled")).count());
        assertEquals(3, history.stream().filter(e -> e.type().equals("TaskCompleted")).count());
        assertEquals(1, history.stream().filter(e -> e.type().equals("ExecutionCompleted")).count());
        assertTrue(history.stream().allMatch(e -> e.data().startsWith("{\"pb\":")));
    }

    @Test
    void get_instance_reports_input_and_output() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("Greetings", "ignored-input");
        hub.client.waitForInstanceCompletion(id, Duration.ofSeconds(30), false);
        OrchestrationMetadata m = hub.client.getInstanceMetadata(id, true);
        assertTrue(m.isInstanceFound());
        assertEquals("ignored-input", m.readInputAs(String.class));
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, m.getRuntimeStatus());
        assertTrue(!hub.client.getInstanceMetadata("no-such-instance", false).isInstanceFound());
    }
}
