package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.eventually;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.NewOrchestrationInstanceOptions;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.Task;
import com.microsoft.durabletask.TaskFailedException;
import io.pgdurable.spi.Event;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Durable Task features through the sidecar with the real 1.5.0 worker and client: timers, fan-out, external
 * events, sub-orchestrations, continue-as-new, sending events, custom status, failure details, scheduled starts.
 * Client waits use a 30 s fallback re-read, so a wait that returns sooner was woken by a notification.
 */
class OrchestrationFeaturesTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final CountDownLatch GATE = new CountDownLatch(1);
    private static SidecarHarness hub;

    @BeforeAll
    static void start() {
        hub = new SidecarHarness("dt_feat", io.pgdurable.postgres.TestDatabase.newSchemaName("dt_feat"),
                c -> c.withWaitFallback(WAIT));
        hub.startWorker(b -> b
                // Timers longer than a second are split into sub-timers: the "long timer" path.
                .maximumTimerInterval(Duration.ofSeconds(1))
                .addOrchestration(orchestration("Timer", ctx -> {
                    Instant due = ctx.getCurrentInstant().plusMillis(ctx.getInput(Long.class));
                    ctx.createTimer(Duration.ofMillis(ctx.getInput(Long.class))).await();
                    ctx.complete(due + "|" + ctx.getCurrentInstant());
                }))
                .addOrchestration(orchestration("LongTimer", ctx -> {
                    Instant due = ctx.getCurrentInstant().plusMillis(ctx.getInput(Long.class));
                    ctx.createTimer(Duration.ofMillis(ctx.getInput(Long.class))).await();
                    // durabletask-client 1.5.0 returns from a split timer after its first sub-timer; the
                    // documented workaround is to wait again until the due time has passed.
                    while (!ctx.getCurrentInstant().isAfter(due)) {
                        ctx.createTimer(due.atZone(ZoneOffset.UTC)).await();
                    }
                    ctx.complete(due + "|" + ctx.getCurrentInstant());
                }))
                .addOrchestration(orchestration("TimestampTimer", ctx -> {
                    Instant due = ctx.getCurrentInstant().plusMillis(700);
                    ctx.createTimer(due.atZone(ZoneOffset.UTC)).await();
                    ctx.complete(due + "|" + ctx.getCurrentInstant());
                }))
                .addOrchestration(orchestration("FanOut", ctx -> {
                    List<Task<Integer>> parts = new ArrayList<>();
                    for (int i = 1; i <= ctx.getInput(Integer.class); i++) {
                        parts.add(ctx.callActivity("Square", i, Integer.class));
                    }
                    ctx.complete(ctx.allOf(parts).await().stream().mapToInt(Integer::intValue).sum());
                }))
                .addOrchestration(orchestration("WaitEvent", ctx -> {
                    ctx.setCustomStatus("waiting");
                    String v = ctx.waitForExternalEvent("go", String.class).await();
                    ctx.setCustomStatus("done");
                    ctx.complete("got " + v);
                }))
                .addOrchestration(orchestration("GateThenEvent", ctx -> {
                    ctx.callActivity("Gate").await();
                    ctx.complete("got " + ctx.waitForExternalEvent("go", String.class).await());
                }))
                .addOrchestration(orchestration("Parent", ctx -> {
                    int doubled = ctx.callSubOrchestrator("Child", 21, ctx.getInstanceId() + "-ok",
                            Integer.class).await();
                    String failure;
                    try {
                        ctx.callSubOrchestrator("FailingChild", null, ctx.getInstanceId() + "-bad",
                                String.class).await();
                        failure = "none";
                    } catch (TaskFailedException e) {
                        failure = e.getErrorDetails().getErrorMessage();
                    }
                    ctx.complete(doubled + ";" + failure);
                }))
                .addOrchestration(orchestration("Child", ctx -> ctx.complete(2 * ctx.getInput(Integer.class))))
                .addOrchestration(orchestration("FailingChild", ctx -> {
                    throw new IllegalArgumentException("child says no");
                }))
                .addOrchestration(orchestration("Counter", ctx -> {
                    int n = ctx.getInput(Integer.class);
                    if (n < 3) {
                        ctx.continueAsNew(n + 1);
                    } else {
                        ctx.complete(n);
                    }
                }))
                .addOrchestration(orchestration("CarryOver", ctx -> {
                    if (ctx.getInput(Integer.class) == 0) {
                        ctx.waitForExternalEvent("first", String.class).await();
                        ctx.continueAsNew(1); // an event not yet consumed is carried into the next execution
                    } else {
                        ctx.complete("next execution got " + ctx.waitForExternalEvent("second", String.class)
                                .await());
                    }
                }))
                .addOrchestration(orchestration("Sender", ctx -> {
                    ctx.sendEvent(ctx.getInput(String.class), "go", "from a sender");
                    ctx.createTimer(Duration.ofMillis(50)).await(); // a second turn: the send must not repeat
                    ctx.complete("sent");
                }))
                .addOrchestration(orchestration("ActivityFails", ctx -> ctx.callActivity("Boom").await()))
                .addOrchestration(orchestration("CatchActivityFailure", ctx -> {
                    try {
                        ctx.callActivity("Boom").await();
                        ctx.complete("no failure");
                    } catch (TaskFailedException e) {
                        ctx.complete(e.getErrorDetails().getErrorType() + ": " + e.getErrorDetails().getErrorMessage());
                    }
                }))
                .addOrchestration(orchestration("Echo", ctx -> ctx.complete(ctx.getInput(String.class))))
                .addActivity(activity("Square", ctx -> ctx.getInput(Integer.class) * ctx.getInput(Integer.class)))
                .addActivity(activity("Gate", ctx -> {
                    try {
                        return GATE.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }))
                .addActivity(activity("Boom", ctx -> {
                    throw new IllegalStateException("boom");
                })));
    }

    @AfterAll
    static void stop() {
        hub.close();
    }

    private static long count(String instance, String type) {
        return hub.provider.read(instance).stream().filter(e -> e.type().equals(type)).count();
    }

    private static OrchestrationMetadata run(String name, Object input) throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance(name, input);
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertNotNull(done);
        return done;
    }

    private static void assertFiredAfterDue(OrchestrationMetadata done) {
        String[] dueAndNow = done.readOutputAs(String.class).split("\\|");
        Instant due = Instant.parse(dueAndNow[0]);
        Instant now = Instant.parse(dueAndNow[1]);
        assertTrue(now.isAfter(due), "the worker saw the timer fire at " + now + ", due " + due);
    }

    /** Every TimerFired reached the worker in a batch whose "now" (OrchestratorStarted) is after its due time. */
    private static void assertNoTimerDeliveredEarly(String instance) {
        java.util.Map<Integer, Instant> due = new java.util.HashMap<>();
        Instant turnTime = null;
        int fired = 0;
        for (Event e : hub.provider.read(instance)) {
            var h = DtEvents.fromEvent(e).orElse(null);
            if (h == null) {
                continue;
            }
            if (h.hasTimerCreated()) {
                due.put(h.getEventId(), DtEvents.instant(h.getTimerCreated().getFireAt()));
            } else if (h.hasOrchestratorStarted()) {
                turnTime = DtEvents.instant(h.getTimestamp());
            } else if (h.hasTimerFired()) {
                Instant d = due.get(h.getTimerFired().getTimerId());
                assertTrue(turnTime.isAfter(d), "timer " + h.getTimerFired().getTimerId() + " due " + d
                        + " delivered in a turn at " + turnTime);
                fired++;
            }
        }
        assertTrue(fired > 0, "no timer fired");
    }

    @Test
    void a_timer_never_fires_before_its_due_time() throws Exception {
        long started = System.nanoTime();
        OrchestrationMetadata done = run("Timer", 600L);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(600));
        assertFiredAfterDue(done);
        assertEquals(1, count(done.getInstanceId(), "TimerCreated"), "a timer fired early is re-armed");
        assertEquals(1, count(done.getInstanceId(), "TimerFired"));
        assertNoTimerDeliveredEarly(done.getInstanceId());
    }

    @Test
    void a_timestamp_timer_fires_at_its_instant() throws Exception {
        OrchestrationMetadata done = run("TimestampTimer", null);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertFiredAfterDue(done);
        assertEquals(1, count(done.getInstanceId(), "TimerCreated"));
    }

    @Test
    void a_long_timer_is_split_and_no_sub_timer_fires_early() throws Exception {
        OrchestrationMetadata done = run("LongTimer", 2_300L);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertFiredAfterDue(done);
        assertTrue(count(done.getInstanceId(), "TimerCreated") >= 3, "split into 1 s sub-timers");
        assertNoTimerDeliveredEarly(done.getInstanceId());
    }

    @Test
    void fan_out_fan_in() throws Exception {
        OrchestrationMetadata done = run("FanOut", 10);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals(385, done.readOutputAs(Integer.class));
        assertEquals(10, count(done.getInstanceId(), "TaskCompleted"));
    }

    @Test
    void an_event_raised_after_the_orchestration_waits_wakes_it() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceStart(id, WAIT, false);
        assertTrue(eventually(WAIT, () -> "waiting".equals(
                hub.client.getInstanceMetadata(id, true).readCustomStatusAs(String.class))));
        hub.client.raiseEvent(id, "go", "green");
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals("got green", done.readOutputAs(String.class));
        assertEquals("done", done.readCustomStatusAs(String.class));
    }

    @Test
    void an_event_raised_before_the_orchestration_waits_is_kept() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("GateThenEvent");
        hub.client.waitForInstanceStart(id, WAIT, false);
        hub.client.raiseEvent(id, "go", "early");
        // The raise is committed before the activity the orchestration waits for can finish.
        GATE.countDown();
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        List<String> order = hub.provider.read(id).stream().map(Event::type)
                .filter(t -> t.equals("EventRaised") || t.equals("TaskCompleted")).toList();
        assertEquals(List.of("EventRaised", "TaskCompleted"), order, "the event arrived before the wait");
        assertEquals("got early", done.readOutputAs(String.class));
    }

    @Test
    void sub_orchestrations_report_success_and_failure_to_their_parent() throws Exception {
        OrchestrationMetadata done = run("Parent", null);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        String[] parts = done.readOutputAs(String.class).split(";", 2);
        assertEquals("42", parts[0]);
        assertTrue(parts[1].contains("child says no"), parts[1]);
        String id = done.getInstanceId();
        assertEquals(OrchestrationRuntimeStatus.COMPLETED,
                hub.client.getInstanceMetadata(id + "-ok", false).getRuntimeStatus());
        OrchestrationMetadata bad = hub.client.getInstanceMetadata(id + "-bad", false);
        assertEquals(OrchestrationRuntimeStatus.FAILED, bad.getRuntimeStatus());
        assertTrue(bad.getFailureDetails().getErrorMessage().contains("child says no"));
        assertEquals(List.of(id + "-bad", id + "-ok"), hub.provider.asManagementCapability().orElseThrow()
                .listChildren(id).stream().sorted().toList());
    }

    @Test
    void continue_as_new_starts_fresh_executions() throws Exception {
        OrchestrationMetadata done = run("Counter", 0);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals(3, done.readOutputAs(Integer.class));
        assertEquals(List.of(1L, 2L, 3L, 4L), hub.provider.asManagementCapability().orElseThrow()
                .listExecutions(done.getInstanceId()));
        // The latest execution's history starts afresh with its own ExecutionStarted.
        List<Event> last = hub.provider.read(done.getInstanceId());
        assertEquals(1, last.stream().filter(e -> e.type().equals("ExecutionStarted")).count());
    }

    @Test
    void continue_as_new_carries_over_unprocessed_events() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("CarryOver", 0);
        hub.client.waitForInstanceStart(id, WAIT, false);
        hub.client.raiseEvent(id, "second", "kept");
        hub.client.raiseEvent(id, "first", "go");
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("next execution got kept", done.readOutputAs(String.class));
        assertEquals(2, hub.provider.asManagementCapability().orElseThrow().listExecutions(id).size());
    }

    @Test
    void an_orchestration_sends_an_event_to_another_exactly_once() throws Exception {
        String target = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceStart(target, WAIT, false);
        OrchestrationMetadata sender = run("Sender", target);
        assertEquals("sent", sender.readOutputAs(String.class));
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(target, WAIT, true);
        assertEquals("got from a sender", done.readOutputAs(String.class));
        assertEquals(1, count(sender.getInstanceId(), "EventSent"));
        assertEquals(2, count(sender.getInstanceId(), "OrchestratorStarted"), "two turns, one send");
    }

    @Test
    void a_failed_activity_fails_the_orchestration_with_details() throws Exception {
        OrchestrationMetadata done = run("ActivityFails", null);
        assertEquals(OrchestrationRuntimeStatus.FAILED, done.getRuntimeStatus());
        assertNotNull(done.getFailureDetails());
        assertEquals("com.microsoft.durabletask.TaskFailedException", done.getFailureDetails().getErrorType());
        assertTrue(done.getFailureDetails().getErrorMessage().contains("boom"),
                done.getFailureDetails().getErrorMessage());
        assertNotNull(done.getFailureDetails().getStackTrace());
    }

    @Test
    void an_activity_failure_reaches_the_orchestration_with_its_type() throws Exception {
        OrchestrationMetadata done = run("CatchActivityFailure", null);
        assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
        assertEquals("java.lang.IllegalStateException: boom", done.readOutputAs(String.class));
    }

    @Test
    void a_scheduled_start_waits_for_its_time() throws Exception {
        Instant at = Instant.now().plusMillis(800);
        String id = hub.client.scheduleNewOrchestrationInstance("Echo",
                new NewOrchestrationInstanceOptions().setInput("later").setStartTime(at));
        assertFalse(hub.client.getInstanceMetadata(id, false).isInstanceFound(), "not started yet");
        OrchestrationMetadata done = hub.client.waitForInstanceCompletion(id, WAIT, true);
        assertEquals("later", done.readOutputAs(String.class));
        assertFalse(done.getCreatedAt().isBefore(at.minusMillis(1)), "created " + done.getCreatedAt());
    }

    @Test
    void starting_a_running_instance_again_is_refused() throws Exception {
        String id = hub.client.scheduleNewOrchestrationInstance("WaitEvent");
        hub.client.waitForInstanceStart(id, WAIT, false);
        io.grpc.StatusRuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.grpc.StatusRuntimeException.class, () -> hub.client.scheduleNewOrchestrationInstance("WaitEvent",
                        new NewOrchestrationInstanceOptions().setInstanceId(id)));
        assertEquals(io.grpc.Status.Code.ALREADY_EXISTS, e.getStatus().getCode());
        hub.client.raiseEvent(id, "go", "x");
        hub.client.waitForInstanceCompletion(id, WAIT, false);
        // A finished instance may be started again: a new execution.
        hub.client.scheduleNewOrchestrationInstance("Echo", new NewOrchestrationInstanceOptions()
                .setInstanceId(id).setInput("again"));
        assertTrue(eventually(WAIT, () -> "\"again\"".equals(hub.client.getInstanceMetadata(id, true)
                .getSerializedOutput())));
    }
}
