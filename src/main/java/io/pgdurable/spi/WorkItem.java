package io.pgdurable.spi;

import java.util.List;
import java.util.Objects;

/**
 * A queue message. The provider reads only routing and identity fields (which queue, which instance, the activity
 * identity, session, tag and a timer's fire time); every payload ({@code input}, {@code result}, {@code data},
 * {@code details}) is opaque text that the provider stores and returns byte for byte.
 *
 * <p>Wire form: externally tagged JSON, {@code {"Variant": {snake_case fields}}}, absent optionals omitted — see
 * {@link #toJson()} and {@link #fromJson(String)}.
 */
public sealed interface WorkItem {

    /** The instance whose orchestrator queue receives this item (the parent for sub-orchestration results). */
    String instance();

    /** True for the one variant that belongs on the worker queue. */
    default boolean isActivity() {
        return this instanceof ActivityExecute;
    }

    /** The variant name used as the JSON tag. */
    default String kind() {
        return getClass().getSimpleName();
    }

    default String toJson() {
        return WorkItemCodec.encode(this);
    }

    /** Decodes the wire form; throws {@link IllegalArgumentException} naming what is wrong. */
    static WorkItem fromJson(String json) {
        return WorkItemCodec.decode(json);
    }

    record StartOrchestration(String instance, String orchestration, String input, String version,
                              String parentInstance, Long parentId, long executionId) implements WorkItem {
        public StartOrchestration {
            required(instance, "instance");
            required(orchestration, "orchestration");
            Objects.requireNonNull(input, "input");
        }

        public StartOrchestration(String instance, String orchestration, String input, String version) {
            this(instance, orchestration, input, version, null, null, 1);
        }
    }

    record ContinueAsNew(String instance, String orchestration, String input, String version,
                         List<CarriedEvent> carryForwardEvents, String initialCustomStatus) implements WorkItem {
        public ContinueAsNew {
            required(instance, "instance");
            required(orchestration, "orchestration");
            Objects.requireNonNull(input, "input");
            carryForwardEvents = carryForwardEvents == null ? List.of() : List.copyOf(carryForwardEvents);
        }
    }

    /** An event carried over a continue-as-new: its name and opaque data. */
    record CarriedEvent(String name, String data) {
        public CarriedEvent {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(data, "data");
        }
    }

    record ActivityExecute(String instance, long executionId, long id, String name, String input,
                           String sessionId, String tag) implements WorkItem {
        public ActivityExecute {
            required(instance, "instance");
            required(name, "name");
            Objects.requireNonNull(input, "input");
        }

        public ActivityExecute(String instance, long executionId, long id, String name, String input) {
            this(instance, executionId, id, name, input, null, null);
        }
    }

    record ActivityCompleted(String instance, long executionId, long id, String result) implements WorkItem {
        public ActivityCompleted {
            required(instance, "instance");
            Objects.requireNonNull(result, "result");
        }
    }

    record ActivityFailed(String instance, long executionId, long id, String details) implements WorkItem {
        public ActivityFailed {
            required(instance, "instance");
            Objects.requireNonNull(details, "details");
        }
    }

    record TimerFired(String instance, long executionId, long id, long fireAtMs) implements WorkItem {
        public TimerFired {
            required(instance, "instance");
        }
    }

    record ExternalRaised(String instance, String name, String data) implements WorkItem {
        public ExternalRaised {
            required(instance, "instance");
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(data, "data");
        }
    }

    /** A persistent (queued) event; dropped by the provider when its instance never existed (orphan rule). */
    record QueueMessage(String instance, String name, String data) implements WorkItem {
        public QueueMessage {
            required(instance, "instance");
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(data, "data");
        }
    }

    record SubOrchCompleted(String parentInstance, long parentExecutionId, long parentId, String result)
            implements WorkItem {
        public SubOrchCompleted {
            required(parentInstance, "parentInstance");
            Objects.requireNonNull(result, "result");
        }

        @Override
        public String instance() {
            return parentInstance;
        }
    }

    record SubOrchFailed(String parentInstance, long parentExecutionId, long parentId, String details)
            implements WorkItem {
        public SubOrchFailed {
            required(parentInstance, "parentInstance");
            Objects.requireNonNull(details, "details");
        }

        @Override
        public String instance() {
            return parentInstance;
        }
    }

    record CancelInstance(String instance, String reason) implements WorkItem {
        public CancelInstance {
            required(instance, "instance");
            Objects.requireNonNull(reason, "reason");
        }
    }

    private static void required(String value, String field) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("work item field '" + field + "' must be a non-empty string");
        }
    }
}
