package io.pgdurable.spi;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One locked orchestration turn: the instance's visible messages and its current execution's history.
 * When the stored history cannot be decoded, {@code history} is empty and {@code historyError} says why; the lock
 * is still held so the runtime can abandon or poison the instance.
 */
public record OrchestrationItem(String instance, String orchestrationName, long executionId, String version,
                                List<Event> history, List<WorkItem> messages, Optional<String> historyError,
                                Map<String, KvEntry> kvSnapshot) {
    public OrchestrationItem {
        history = List.copyOf(history);
        messages = List.copyOf(messages);
        kvSnapshot = Map.copyOf(kvSnapshot);
    }
}
