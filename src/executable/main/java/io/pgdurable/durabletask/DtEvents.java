package io.pgdurable.durabletask;

import com.google.protobuf.StringValue;
import com.google.protobuf.Timestamp;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorStartedEvent;
import io.pgdurable.spi.Event;
import java.time.Instant;
import java.util.Optional;

/** Durable Task history events as provider {@link Event}s, and the time conversions the protocol needs. */
final class DtEvents {
    /** The event id Durable Task uses for events that answer no action of the orchestrator. */
    static final int NO_ID = -1;

    private DtEvents() {}

    /** The provider event: type = the Durable Task kind ("TaskScheduled"), data = the protobuf bytes. */
    static Event toEvent(long eventId, HistoryEvent e) {
        return new Event(eventId, kind(e), DtPayload.wrap(e));
    }

    /** The Durable Task event inside a provider event, or empty for an event of another vocabulary. */
    static Optional<HistoryEvent> fromEvent(Event e) {
        if (!DtPayload.isWrapped(e.data())) {
            return Optional.empty();
        }
        return Optional.of(DtPayload.unwrap(e.data(), HistoryEvent.parser()));
    }

    /** "ExecutionStarted", "TaskCompleted", ... (the oneof field name, capitalised). */
    static String kind(HistoryEvent e) {
        if (e.getEventTypeCase() == HistoryEvent.EventTypeCase.EVENTTYPE_NOT_SET) {
            throw new IllegalArgumentException("history event without a kind");
        }
        String field = HistoryEvent.getDescriptor().findFieldByNumber(e.getEventTypeCase().getNumber()).getName();
        return Character.toUpperCase(field.charAt(0)) + field.substring(1);
    }

    static HistoryEvent.Builder event(int eventId, Instant at) {
        return HistoryEvent.newBuilder().setEventId(eventId).setTimestamp(timestamp(at));
    }

    static HistoryEvent orchestratorStarted(Instant now) {
        return event(NO_ID, now).setOrchestratorStarted(OrchestratorStartedEvent.getDefaultInstance()).build();
    }

    static Timestamp timestamp(Instant at) {
        return Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()).build();
    }

    static Instant instant(Timestamp ts) {
        return Instant.ofEpochSecond(ts.getSeconds(), ts.getNanos());
    }

    static Timestamp timestampMillis(long epochMillis) {
        return timestamp(Instant.ofEpochMilli(epochMillis));
    }

    /**
     * Epoch milliseconds rounded up: a timer becomes visible at this instant, and the worker treats a timer that
     * fires even a microsecond before its due time as not yet due (it schedules another timer for the rest).
     */
    static long ceilMillis(Timestamp ts) {
        long millis = Math.multiplyExact(ts.getSeconds(), 1000L) + ts.getNanos() / 1_000_000;
        return ts.getNanos() % 1_000_000 == 0 ? millis : millis + 1;
    }

    /** A present StringValue's text, or null when absent. */
    static String text(boolean present, StringValue v) {
        return present ? v.getValue() : null;
    }

    static StringValue string(String s) {
        return StringValue.of(s);
    }
}
