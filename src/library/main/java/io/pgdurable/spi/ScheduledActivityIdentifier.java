package io.pgdurable.spi;

/** Identifies a scheduled activity for cancellation: instance, execution and the ActivityScheduled event id. */
public record ScheduledActivityIdentifier(String instance, long executionId, long activityId) {
    public ScheduledActivityIdentifier {
        Fields.nonEmpty(instance, "ScheduledActivityIdentifier", "instance");
    }
}
