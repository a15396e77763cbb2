package io.pgdurable.metrics;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.function.UnaryOperator;

/**
 * Run by {@link OptionalMicrometerTest} inside a class loader without Micrometer: a long-polling provider's
 * round trip. Takes "url\nschema"; answers what happened (the test compares the words).
 */
public final class WithoutMicrometer implements UnaryOperator<String> {
    @Override
    public String apply(String urlAndSchema) {
        String[] parts = urlAndSchema.split("\n");
        try {
            Class.forName("io.micrometer.core.instrument.MeterRegistry");
            return "micrometer is visible: the test proves nothing";
        } catch (ClassNotFoundException expected) {
            // the point of this run
        }
        try (PostgresProvider p = PostgresProvider.create(PostgresProviderConfig.builder().jdbcUrl(parts[0])
                .schema(parts[1]).poolSize(3).longPolling(true).build())) {
            p.enqueueForWorker(new WorkItem.ActivityExecute("inst", 1, 1, "A", "{}"));
            FetchedWorkItem got = p.fetchWorkItem(Duration.ofMinutes(1), Duration.ofSeconds(5), null,
                    TagFilter.defaultOnly()).orElseThrow();
            p.ackWorkItem(got.lockToken(), null);
            return "micrometer absent; enqueued, fetched and acked with long polling";
        }
    }
}
