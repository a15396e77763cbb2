package io.pgdurable.spi;

/**
 * One history record. {@code data} is the runtime's own JSON object, stored and returned byte for byte; {@code type}
 * names its kind and is stored beside it. The provider never interprets an event except for the few kinds the
 * contract makes it act on ({@code CustomStatusUpdated}, {@code KeyValueSet}, {@code KeyValueCleared},
 * {@code KeyValuesCleared}, and {@code OrchestrationStarted} for stats); a runtime with its own vocabulary simply
 * uses other type names. {@link Events} builds the duroxide vocabulary.
 */
public record Event(long eventId, String type, String data) {
    public Event {
        Fields.present(type, "Event", "type");
        Fields.present(data, "Event", "data");
    }
}
