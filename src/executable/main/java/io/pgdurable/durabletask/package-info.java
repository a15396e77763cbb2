/**
 * A Durable Task sidecar on top of the provider: the TaskHubSidecarService gRPC protocol in its current revision, as
 * the project's own definition in src/executable/main/proto declares it (classes generated into
 * {@code io.pgdurable.durabletask.protocol}), which newer Durable Task SDKs speak and
 * {@code com.microsoft:durabletask-client} 1.5.0 speaks a wire-compatible older revision of, served from PostgreSQL
 * through the {@link io.pgdurable.spi.OrchestrationProvider} SPI (see docs/durabletask.md).
 *
 * <p>Durable Task history events and message payloads are stored as protobuf bytes inside the provider's opaque JSON
 * ({@link io.pgdurable.durabletask.DtPayload}); the provider never sees Durable Task semantics.
 */
package io.pgdurable.durabletask;
