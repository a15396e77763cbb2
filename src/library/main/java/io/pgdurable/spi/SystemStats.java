package io.pgdurable.spi;

/** Per-instance storage figures (current execution's history, carried-over events, key-value usage). */
public record SystemStats(long historyEventCount, long historySizeBytes, long queuePendingCount,
                          long kvUserKeyCount, long kvTotalValueBytes) {}
