package io.pgdurable.spi;

/**
 * One terminal ack of {@link OrchestrationProvider#ackWorkItems}: the leased item's token and the completion to
 * enqueue for its orchestration ({@code null}: none), exactly the two arguments of
 * {@link OrchestrationProvider#ackWorkItem}.
 */
public record WorkAck(String lockToken, WorkItem completion) {}
