package io.pgdurable.spi;

import java.util.Objects;

/** Identifies a scheduled activity for cancellation: instance, execution and the ActivityScheduled event id. */
public record ScheduledActivityIdentifier(String instance, long executionId, long activityId) {
    public ScheduledActivityIdentifier {
        Objects.requireNonNull(instance, "instance");
    }
}
