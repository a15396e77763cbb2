package io.pgdurable.examples;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.Optional;

/** The README's transactionalNotify example, compiled and run by {@link ReadmeExamplesTest}. */
public final class TransactionalNotifyExample {
    private TransactionalNotifyExample() {}

    /** Builds the README's configuration, enqueues one activity and long-polls it back. */
    public static Optional<FetchedWorkItem> run(String jdbcUrl, String schema) {
        // README:transactional-notify:begin
        PostgresProviderConfig config = PostgresProviderConfig.builder()
                .jdbcUrl(jdbcUrl)
                .schema(schema)
                .longPolling(true)
                .transactionalNotify(true)   // own writes notify inside their transactions (default: announced after)
                .build();
        // README:transactional-notify:end
        try (PostgresProvider provider = PostgresProvider.create(config)) {
            provider.enqueueForWorker(new WorkItem.ActivityExecute("order-7", 1, 1, "Ship", "{}"));
            return provider.fetchWorkItem(Duration.ofSeconds(30), Duration.ofSeconds(5), null,
                    TagFilter.defaultOnly());
        }
    }
}
