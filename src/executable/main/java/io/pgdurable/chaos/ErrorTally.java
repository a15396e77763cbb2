package io.pgdurable.chaos;

import io.pgdurable.spi.ProviderException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/** The errors the provider's callers saw during a run, by operation and by classification. */
final class ErrorTally {
    private static final int KEPT_MESSAGES = 5;

    private final Map<String, AtomicLong> retryable = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> permanent = new ConcurrentHashMap<>();
    private final List<String> permanentMessages = new CopyOnWriteArrayList<>();

    void seen(String operation, ProviderException e) {
        Map<String, AtomicLong> counts = e.retryable() ? retryable : permanent;
        counts.computeIfAbsent(operation, k -> new AtomicLong()).incrementAndGet();
        if (!e.retryable() && permanentMessages.size() < KEPT_MESSAGES) {
            permanentMessages.add(operation + ": " + e.getMessage());
        }
    }

    Snapshot snapshot() {
        return new Snapshot(copy(retryable), copy(permanent), List.copyOf(permanentMessages));
    }

    private static Map<String, Long> copy(Map<String, AtomicLong> counts) {
        Map<String, Long> m = new TreeMap<>();
        counts.forEach((k, v) -> m.put(k, v.get()));
        return m;
    }

    /** Counts per operation; the first few permanent errors' messages. */
    record Snapshot(Map<String, Long> retryable, Map<String, Long> permanent, List<String> permanentMessages) {
        long retryableTotal() {
            return retryable.values().stream().mapToLong(Long::longValue).sum();
        }

        long permanentTotal() {
            return permanent.values().stream().mapToLong(Long::longValue).sum();
        }
    }
}
