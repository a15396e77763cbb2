package io.pgdurable.spi;

import java.util.List;

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
            Fields.nonEmpty(instance, "WorkItem.StartOrchestration", "instance");
            Fields.nonEmpty(orchestration, "WorkItem.StartOrchestration", "orchestration");
            Fields.present(input, "WorkItem.StartOrchestration", "input");
        }

        public StartOrchestration(String instance, String orchestration, String input, String version) {
            this(instance, orchestration, input, version, null, null, 1);
        }
    }

    record ContinueAsNew(String instance, String orchestration, String input, String version,
                         List<CarriedEvent> carryForwardEvents, String initialCustomStatus) implements WorkItem {
        public ContinueAsNew {
            Fields.nonEmpty(instance, "WorkItem.ContinueAsNew", "instance");
            Fields.nonEmpty(orchestration, "WorkItem.ContinueAsNew", "orchestration");
            Fields.present(input, "WorkItem.ContinueAsNew", "input");
            carryForwardEvents = carryForwardEvents == null ? List.of()
                    : List.copyOf(Fields.noNulls(carryForwardEvents, "WorkItem.ContinueAsNew", "carryForwardEvents"));
        }
    }

    /** An event carried over a continue-as-new: its name and opaque data. */
    record CarriedEvent(String name, String data) {
        public CarriedEvent {
            Fields.present(name, "WorkItem.CarriedEvent", "name");
            Fields.present(data, "WorkItem.CarriedEvent", "data");
        }
    }

    record ActivityExecute(String instance, long executionId, long id, String name, String input,
                           String sessionId, String tag) implements WorkItem {
        public ActivityExecute {
            Fields.nonEmpty(instance, "WorkItem.ActivityExecute", "instance");
            Fields.nonEmpty(name, "WorkItem.ActivityExecute", "name");
            Fields.present(input, "WorkItem.ActivityExecute", "input");
        }

        public ActivityExecute(String instance, long executionId, long id, String name, String input) {
            this(instance, executionId, id, name, input, null, null);
        }
    }

    record ActivityCompleted(String instance, long executionId, long id, String result) implements WorkItem {
        public ActivityCompleted {
            Fields.nonEmpty(instance, "WorkItem.ActivityCompleted", "instance");
            Fields.present(result, "WorkItem.ActivityCompleted", "result");
        }
    }

    record ActivityFailed(String instance, long executionId, long id, String details) implements WorkItem {
        public ActivityFailed {
            Fields.nonEmpty(instance, "WorkItem.ActivityFailed", "instance");
            Fields.present(details, "WorkItem.ActivityFailed", "details");
        }
    }

    record TimerFired(String instance, long executionId, long id, long fireAtMs) implements WorkItem {
        public TimerFired {
            Fields.nonEmpty(instance, "WorkItem.TimerFired", "instance");
        }
    }

    record ExternalRaised(String instance, String name, String data) implements WorkItem {
        public ExternalRaised {
            Fields.nonEmpty(instance, "WorkItem.ExternalRaised", "instance");
            Fields.present(name, "WorkItem.ExternalRaised", "name");
            Fields.present(data, "WorkItem.ExternalRaised", "data");
        }
    }

    /** A persistent (queued) event; dropped by the provider when its instance never existed (orphan rule). */
    record QueueMessage(String instance, String name, String data) implements WorkItem {
        public QueueMessage {
            Fields.nonEmpty(instance, "WorkItem.QueueMessage", "instance");
            Fields.present(name, "WorkItem.QueueMessage", "name");
            Fields.present(data, "WorkItem.QueueMessage", "data");
        }
    }

    record SubOrchCompleted(String parentInstance, long parentExecutionId, long parentId, String result)
            implements WorkItem {
        public SubOrchCompleted {
            Fields.nonEmpty(parentInstance, "WorkItem.SubOrchCompleted", "parentInstance");
            Fields.present(result, "WorkItem.SubOrchCompleted", "result");
        }

        @Override
        public String instance() {
            return parentInstance;
        }
    }

    record SubOrchFailed(String parentInstance, long parentExecutionId, long parentId, String details)
            implements WorkItem {
        public SubOrchFailed {
            Fields.nonEmpty(parentInstance, "WorkItem.SubOrchFailed", "parentInstance");
            Fields.present(details, "WorkItem.SubOrchFailed", "details");
        }

        @Override
        public String instance() {
            return parentInstance;
        }
    }

    record CancelInstance(String instance, String reason) implements WorkItem {
        public CancelInstance {
            Fields.nonEmpty(instance, "WorkItem.CancelInstance", "instance");
            Fields.present(reason, "WorkItem.CancelInstance", "reason");
        }
    }

}
