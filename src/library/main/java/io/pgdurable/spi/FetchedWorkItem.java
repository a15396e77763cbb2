package io.pgdurable.spi;

/** A leased activity with the token that acks, renews or abandons it and how often it has been fetched. */
public record FetchedWorkItem(WorkItem item, String lockToken, int attemptCount) {}
