package io.pgdurable.spi;

import java.util.Optional;

/**
 * What the runtime decided about the execution in this turn. Every field is optional; an absent field changes
 * nothing. The instance row is created only when both name and version are present.
 *
 * @param status one of {@code Running}, {@code Completed}, {@code Failed}, {@code ContinuedAsNew}
 * @param output the result, error text or next input that goes with the status
 */
public record ExecutionMetadata(String status, String output, String orchestrationName,
                                String orchestrationVersion, String parentInstanceId, SemVer pinnedVersion) {
    public static final String RUNNING = "Running";
    public static final String COMPLETED = "Completed";
    public static final String FAILED = "Failed";
    public static final String CONTINUED_AS_NEW = "ContinuedAsNew";

    private static final ExecutionMetadata EMPTY = new ExecutionMetadata(null, null, null, null, null, null);

    public static ExecutionMetadata empty() {
        return EMPTY;
    }

    /** Metadata of a first turn: creates the instance row with this name and version. */
    public static ExecutionMetadata of(String orchestrationName, String orchestrationVersion) {
        return EMPTY.withOrchestration(orchestrationName, orchestrationVersion);
    }

    public ExecutionMetadata withStatus(String newStatus, String newOutput) {
        return new ExecutionMetadata(newStatus, newOutput, orchestrationName, orchestrationVersion,
                parentInstanceId, pinnedVersion);
    }

    public ExecutionMetadata withOrchestration(String name, String version) {
        return new ExecutionMetadata(status, output, name, version, parentInstanceId, pinnedVersion);
    }

    public ExecutionMetadata withParentInstanceId(String parent) {
        return new ExecutionMetadata(status, output, orchestrationName, orchestrationVersion, parent, pinnedVersion);
    }

    public ExecutionMetadata withPinnedVersion(SemVer pin) {
        return new ExecutionMetadata(status, output, orchestrationName, orchestrationVersion, parentInstanceId, pin);
    }

    public Optional<String> statusValue() {
        return Optional.ofNullable(status);
    }

    /** True for the statuses that end an execution (and merge its key-value delta). */
    public boolean endsExecution() {
        return COMPLETED.equals(status) || FAILED.equals(status) || CONTINUED_AS_NEW.equals(status);
    }
}
