package io.pgdurable.examples;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.List;

/** The README's quick start, compiled and run by {@link ReadmeExamplesTest} so the README cannot rot. */
public final class QuickStart {
    private QuickStart() {}

    /** Runs one orchestration with one activity through the provider; returns the final execution status. */
    public static String run(String jdbcUrl, String schema) {
        // README:quick-start:begin
        PostgresProviderConfig config = PostgresProviderConfig.builder()
                .jdbcUrl(jdbcUrl)                 // e.g. jdbc:postgresql://db:5432/app?user=app
                .schema(schema)                   // one schema per task hub, created and migrated on start
                .poolSize(8)
                .build();
        try (PostgresProvider provider = PostgresProvider.create(config)) {
            // A client starts an orchestration.
            provider.enqueueForOrchestrator(
                    new WorkItem.StartOrchestration("order-42", "ProcessOrder", "{\"sku\":7}", "1.0.0"), null);

            // The orchestrator dispatcher locks the instance and gets its messages and history ...
            FetchedOrchestration turn = provider.fetchOrchestrationItem(
                    Duration.ofSeconds(5), Duration.ZERO, null).orElseThrow();
            // ... replays it, schedules an activity, and commits the whole turn atomically.
            provider.ackOrchestrationItem(turn.lockToken(), 1,
                    List.of(Events.orchestrationStarted(1, "ProcessOrder", "1.0.0", "{\"sku\":7}"),
                            Events.activityScheduled(2, "Charge", "{\"sku\":7}")),
                    List.of(new WorkItem.ActivityExecute("order-42", 1, 2, "Charge", "{\"sku\":7}")),
                    List.of(),
                    ExecutionMetadata.of("ProcessOrder", "1.0.0"),
                    List.of());

            // A worker leases the activity, runs it, and sends the result to the orchestration.
            FetchedWorkItem work = provider.fetchWorkItem(
                    Duration.ofSeconds(30), Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
            provider.ackWorkItem(work.lockToken(), new WorkItem.ActivityCompleted("order-42", 1, 2, "\"charged\""));

            // The next turn sees the completion and finishes the orchestration.
            FetchedOrchestration next = provider.fetchOrchestrationItem(
                    Duration.ofSeconds(5), Duration.ZERO, null).orElseThrow();
            provider.ackOrchestrationItem(next.lockToken(), 1,
                    List.of(Events.activityCompleted(3, 2, "\"charged\""),
                            Events.orchestrationCompleted(4, "\"done\"")),
                    List.of(), List.of(),
                    ExecutionMetadata.empty().withStatus(ExecutionMetadata.COMPLETED, "\"done\""),
                    List.of());

            return provider.asManagementCapability().orElseThrow().getInstanceInfo("order-42").status();
        }
        // README:quick-start:end
    }
}
