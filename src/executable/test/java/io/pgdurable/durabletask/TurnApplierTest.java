package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Timestamp;
import io.pgdurable.durabletask.protocol.OrchestratorService.EventSentEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationInstance;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.SendEventAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskCompletedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.TimerCreatedEvent;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.WorkItem;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The turn decisions that need no database: timer times, stale messages, sends carried out once, time rounding. */
class TurnApplierTest {
    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");
    private final TurnApplier applier = new TurnApplier(Clock.fixed(NOW, ZoneOffset.UTC));

    private static HistoryEvent started() {
        return DtEvents.event(DtEvents.NO_ID, NOW).setExecutionStarted(ExecutionStartedEvent.newBuilder()
                .setName("O").setOrchestrationInstance(OrchestrationInstance.newBuilder().setInstanceId("i")))
                .build();
    }

    private static FetchedOrchestration fetched(long executionId, List<HistoryEvent> history,
                                                List<WorkItem> messages) {
        List<Event> events = new ArrayList<>();
        for (HistoryEvent h : history) {
            events.add(DtEvents.toEvent(events.size() + 1, h));
        }
        return new FetchedOrchestration(new OrchestrationItem("i", "O", executionId, "", events, messages,
                Optional.empty(), Map.of()), "token", 1);
    }

    @Test
    void a_fired_timer_is_never_shown_before_its_due_time_even_when_the_clock_lags() {
        Instant due = NOW.plusNanos(1_500_000); // 1.5 ms after the (lagging) clock
        HistoryEvent created = DtEvents.event(0, NOW).setTimerCreated(TimerCreatedEvent.newBuilder()
                .setFireAt(DtEvents.timestamp(due))).build();
        WorkItem fired = new WorkItem.TimerFired("i", 1, 0, DtEvents.ceilMillis(DtEvents.timestamp(due)));
        Turn t = applier.prepare(fetched(1, List.of(started(), created), List.of(fired)));
        assertTrue(t.needsWorker());
        HistoryEvent orchestratorStarted = t.request.getNewEvents(0);
        assertTrue(orchestratorStarted.hasOrchestratorStarted());
        assertTrue(DtEvents.instant(orchestratorStarted.getTimestamp()).isAfter(due));
        assertEquals(2, t.request.getPastEventsCount());
    }

    @Test
    void fire_times_round_up_to_the_millisecond() {
        assertEquals(1_001, DtEvents.ceilMillis(Timestamp.newBuilder().setSeconds(1).setNanos(1).build()));
        assertEquals(1_001, DtEvents.ceilMillis(Timestamp.newBuilder().setSeconds(1).setNanos(1_000_000).build()));
        assertEquals(1_000, DtEvents.ceilMillis(Timestamp.newBuilder().setSeconds(1).build()));
    }

    @Test
    void a_result_for_an_earlier_execution_is_dropped() {
        HistoryEvent done = DtEvents.event(DtEvents.NO_ID, NOW).setTaskCompleted(TaskCompletedEvent.newBuilder()
                .setTaskScheduledId(0)).build();
        Turn t = applier.prepare(fetched(2, List.of(started()),
                List.of(DtMessages.toInstance("i", 1, done))));
        assertFalse(t.needsWorker(), "nothing left for the worker");
        assertTrue(TurnApplier.consumeOnly(t).historyDelta().isEmpty());
    }

    @Test
    void a_send_action_is_carried_out_once_across_turns() {
        HistoryEvent sent = DtEvents.event(3, NOW).setEventSent(EventSentEvent.newBuilder().setInstanceId("other")
                .setName("go")).build();
        HistoryEvent raised = DtEvents.event(DtEvents.NO_ID, NOW).setEventRaised(
                io.pgdurable.durabletask.protocol.OrchestratorService.EventRaisedEvent.newBuilder()
                        .setName("x")).build();
        Turn t = applier.prepare(fetched(1, List.of(started(), sent),
                List.of(DtMessages.toInstance("i", 0, raised))));
        assertTrue(t.request.getPastEventsList().stream().noneMatch(HistoryEvent::hasEventSent),
                "the 1.5.0 worker cannot replay EventSent");
        OrchestratorAction again = OrchestratorAction.newBuilder().setId(3).setSendEvent(SendEventAction
                .newBuilder().setInstance(OrchestrationInstance.newBuilder().setInstanceId("other"))
                .setName("go")).build();
        TurnApplier.Ack ack = applier.complete(t, OrchestratorResponse.newBuilder().setInstanceId("i")
                .addActions(again).build());
        assertTrue(ack.orchestratorItems().isEmpty());
    }

    @Test
    void the_status_channel_fits_an_identifier_and_cannot_collide_with_provider_channels() {
        String longSchema = "s".repeat(63);
        String channel = InstanceWatch.channelFor(longSchema);
        assertTrue(channel.getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= 63);
        assertTrue(InstanceWatch.channelFor("hub").contains("."), "schema names have no dots");
    }

    @Test
    void a_turn_that_delivers_a_timer_starts_after_its_due_time_at_the_workers_millisecond_resolution() {
        Instant due = Instant.parse("2026-12-06T20:23:07.420Z");
        // Claimed ahead, the turn starts within the due time's millisecond: the worker, which truncates to the
        // millisecond, would read it as the due time itself.
        assertEquals(Instant.parse("2026-12-06T20:23:07.421Z"),
                TurnTime.after(due.plusNanos(1_000), java.util.List.of(due)));
        assertEquals(Instant.parse("2026-12-06T20:23:07.421Z"), TurnTime.after(due, java.util.List.of(due)));
        // A due time inside a millisecond: the next whole millisecond is the first the worker sees as after it.
        Instant midMillisecond = Instant.parse("2026-12-06T20:23:07.420500Z");
        assertEquals(Instant.parse("2026-12-06T20:23:07.421Z"), TurnTime.after(
                Instant.parse("2026-12-06T20:23:07.420700Z"), java.util.List.of(midMillisecond)));
        // Later than that: the clock's own time, untouched; with no timer delivered, too.
        Instant later = Instant.parse("2026-12-06T20:23:07.421300Z");
        assertEquals(later, TurnTime.after(later, java.util.List.of(due)));
        assertEquals(due, TurnTime.after(due, java.util.List.of()));
        // Several timers: after the latest of them.
        assertEquals(Instant.parse("2026-12-06T20:23:07.426Z"), TurnTime.after(due,
                java.util.List.of(due, Instant.parse("2026-12-06T20:23:07.425Z"), due.minusMillis(3))));
    }
}
