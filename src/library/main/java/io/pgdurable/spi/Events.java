package io.pgdurable.spi;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builders for the duroxide history vocabulary: a JSON object with the envelope ({@code event_id},
 * {@code source_event_id}, {@code timestamp_ms}, {@code type}) and the kind's fields flattened beside it.
 */
public final class Events {
    public static final String ORCHESTRATION_STARTED = "OrchestrationStarted";
    public static final String CUSTOM_STATUS_UPDATED = "CustomStatusUpdated";
    public static final String KEY_VALUE_SET = "KeyValueSet";
    public static final String KEY_VALUE_CLEARED = "KeyValueCleared";
    public static final String KEY_VALUES_CLEARED = "KeyValuesCleared";

    private Events() {}

    /** Any kind: {@code fields} alternate name, value (values may be null). */
    public static Event of(long eventId, String type, Object... fields) {
        return of(eventId, null, type, fields);
    }

    public static Event of(long eventId, Long sourceEventId, String type, Object... fields) {
        if (fields.length % 2 != 0) {
            throw new IllegalArgumentException("fields must alternate name and value");
        }
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("event_id", eventId);
        json.put("source_event_id", sourceEventId);
        json.put("timestamp_ms", System.currentTimeMillis());
        json.put("type", type);
        for (int i = 0; i < fields.length; i += 2) {
            json.put((String) fields[i], fields[i + 1]);
        }
        return new Event(eventId, type, Json.write(json));
    }

    public static Event orchestrationStarted(long eventId, String name, String version, String input) {
        return of(eventId, ORCHESTRATION_STARTED, "name", name, "version", version, "input", input);
    }

    /** OrchestrationStarted with events carried over a continue-as-new ({@code [name, data]} pairs). */
    public static Event orchestrationStarted(long eventId, String name, String version, String input,
                                             List<WorkItem.CarriedEvent> carried) {
        List<Object> pairs = new ArrayList<>();
        for (WorkItem.CarriedEvent e : carried) {
            pairs.add(List.of(e.name(), e.data()));
        }
        return of(eventId, ORCHESTRATION_STARTED, "name", name, "version", version, "input", input,
                "carry_forward_events", pairs);
    }

    public static Event orchestrationCompleted(long eventId, String output) {
        return of(eventId, "OrchestrationCompleted", "output", output);
    }

    public static Event orchestrationFailed(long eventId, String details) {
        return of(eventId, "OrchestrationFailed", "details", details);
    }

    public static Event orchestrationContinuedAsNew(long eventId, String input) {
        return of(eventId, "OrchestrationContinuedAsNew", "input", input);
    }

    public static Event activityScheduled(long eventId, String name, String input) {
        return of(eventId, "ActivityScheduled", "name", name, "input", input);
    }

    public static Event activityCompleted(long eventId, long sourceEventId, String result) {
        return of(eventId, sourceEventId, "ActivityCompleted", "result", result);
    }

    public static Event timerCreated(long eventId, long fireAtMs) {
        return of(eventId, "TimerCreated", "fire_at_ms", fireAtMs);
    }

    public static Event externalEvent(long eventId, String name, String data) {
        return of(eventId, "ExternalEvent", "name", name, "data", data);
    }

    /** {@code status == null} clears the custom status. */
    public static Event customStatusUpdated(long eventId, String status) {
        return of(eventId, CUSTOM_STATUS_UPDATED, "status", status);
    }

    public static Event keyValueSet(long eventId, String key, String value, long lastUpdatedAtMs) {
        return of(eventId, KEY_VALUE_SET, "key", key, "value", value, "last_updated_at_ms", lastUpdatedAtMs);
    }

    public static Event keyValueCleared(long eventId, String key) {
        return of(eventId, KEY_VALUE_CLEARED, "key", key);
    }

    public static Event keyValuesCleared(long eventId) {
        return of(eventId, KEY_VALUES_CLEARED);
    }
}
