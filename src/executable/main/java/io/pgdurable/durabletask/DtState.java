package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestrationStatus;
import io.pgdurable.durabletask.protocol.OrchestratorService.TaskFailureDetails;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a client asks about an execution that the provider's status column cannot say: the exact Durable Task
 * status (suspended, terminated), the input, the output and the failure details. It is stored as the provider's
 * execution output (opaque text) whenever the sidecar sets a status, so a status read is one row, never a history
 * scan. The provider's own status stays in its four-value vocabulary (see {@link #providerStatus}).
 */
record DtState(OrchestrationStatus status, String input, String output, TaskFailureDetails failure,
               Map<String, String> tags, long createdMs) {

    DtState {
        tags = tags == null ? Map.of() : Map.copyOf(tags);
    }

    /**
     * @param createdMs when the execution was created: its ExecutionStarted event's time (the client's start call,
     *                  or the parent's turn), which precedes its first turn. The provider's created time is when
     *                  that first turn was committed, later than the orchestration's own clock in that turn; a
     *                  client comparing the two (a timer of N seconds ends at least N seconds after creation) needs
     *                  this one. 0 when unknown (a state written before it was kept).
     */
    static DtState running(String input, Map<String, String> tags, long createdMs) {
        return new DtState(OrchestrationStatus.ORCHESTRATION_STATUS_RUNNING, input, null, null, tags, createdMs);
    }

    DtState withStatus(OrchestrationStatus newStatus) {
        return new DtState(newStatus, input, output, failure, tags, createdMs);
    }

    DtState finished(OrchestrationStatus newStatus, String newOutput, TaskFailureDetails newFailure) {
        return new DtState(newStatus, input, newOutput, newFailure, tags, createdMs);
    }

    boolean isTerminal() {
        return isTerminal(status);
    }

    static boolean isTerminal(OrchestrationStatus s) {
        return s == OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED
                || s == OrchestrationStatus.ORCHESTRATION_STATUS_FAILED
                || s == OrchestrationStatus.ORCHESTRATION_STATUS_TERMINATED
                || s == OrchestrationStatus.ORCHESTRATION_STATUS_CANCELED;
    }

    /**
     * Terminated and canceled count as failed for the provider: the execution ended without doing its work, and
     * the provider's bulk purge and metrics then treat it as finished.
     */
    static String providerStatus(OrchestrationStatus s) {
        return switch (s) {
            case ORCHESTRATION_STATUS_COMPLETED -> ExecutionMetadata.COMPLETED;
            case ORCHESTRATION_STATUS_FAILED, ORCHESTRATION_STATUS_TERMINATED, ORCHESTRATION_STATUS_CANCELED ->
                    ExecutionMetadata.FAILED;
            case ORCHESTRATION_STATUS_CONTINUED_AS_NEW -> ExecutionMetadata.CONTINUED_AS_NEW;
            default -> ExecutionMetadata.RUNNING;
        };
    }

    String toJson() {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("dt_status", shortName(status));
        json.put("input", input);
        json.put("output", output);
        if (failure != null) {
            json.put("failure", DtPayload.wrap(failure));
        }
        if (!tags.isEmpty()) {
            json.put("tags", new java.util.TreeMap<>(tags));
        }
        if (createdMs > 0) {
            json.put("created_ms", createdMs);
        }
        return Json.write(json);
    }

    /**
     * Reads what {@link #toJson} wrote; text of any other form (an instance another runtime wrote) becomes a state
     * derived from the provider's status with that text as output.
     */
    static DtState parse(String providerStatus, String json) {
        if (json != null) {
            try {
                Map<String, Object> m = Json.parseObject(json);
                if (m.get("dt_status") instanceof String s) {
                    TaskFailureDetails failure = m.get("failure") instanceof String f
                            ? DtPayload.unwrap(f, TaskFailureDetails.parser()) : null;
                    Map<String, String> tags = new LinkedHashMap<>();
                    if (m.get("tags") instanceof Map<?, ?> t) {
                        t.forEach((k, v) -> tags.put(String.valueOf(k), String.valueOf(v)));
                    }
                    long created = m.get("created_ms") instanceof Number n ? n.longValue() : 0;
                    return new DtState(fromShortName(s), (String) m.get("input"), (String) m.get("output"), failure,
                            tags, created);
                }
            } catch (IllegalArgumentException | ClassCastException notOurs) {
                // falls through: not an envelope
            }
        }
        OrchestrationStatus s = switch (providerStatus == null ? "" : providerStatus) {
            case ExecutionMetadata.COMPLETED -> OrchestrationStatus.ORCHESTRATION_STATUS_COMPLETED;
            case ExecutionMetadata.FAILED -> OrchestrationStatus.ORCHESTRATION_STATUS_FAILED;
            default -> OrchestrationStatus.ORCHESTRATION_STATUS_RUNNING;
        };
        return new DtState(s, null, json, null, Map.of(), 0);
    }

    static String shortName(OrchestrationStatus s) {
        return s.name().substring("ORCHESTRATION_STATUS_".length());
    }

    static OrchestrationStatus fromShortName(String s) {
        return OrchestrationStatus.valueOf("ORCHESTRATION_STATUS_" + s);
    }
}
