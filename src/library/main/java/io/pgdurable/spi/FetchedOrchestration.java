package io.pgdurable.spi;

/** A fetched turn with the token that acks or abandons it and the highest attempt count among its messages. */
public record FetchedOrchestration(OrchestrationItem item, String lockToken, int attemptCount) {}
