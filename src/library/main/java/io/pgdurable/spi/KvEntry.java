package io.pgdurable.spi;

/** A committed key-value entry as seen in a fetch snapshot. */
public record KvEntry(String value, long lastUpdatedAtMs) {}
