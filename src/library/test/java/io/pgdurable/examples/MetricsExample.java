package io.pgdurable.examples;

import io.micrometer.core.instrument.MeterRegistry;
import io.pgdurable.metrics.PgDurableMetrics;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;

/** docs/operations.md's registration example, compiled and run by {@link OperationsDocExamplesTest}. */
final class MetricsExample {
    private MetricsExample() {}

    static PostgresProvider start(String jdbcUrl, String schema, MeterRegistry meterRegistry) {
        // docs/operations.md:register:begin
        PostgresProvider provider = PostgresProvider.create(PostgresProviderConfig.builder()
                .jdbcUrl(jdbcUrl)
                .schema(schema)
                .longPolling(true)
                .metrics(new PgDurableMetrics(meterRegistry))   // io.pgdurable.metrics; needs micrometer-core
                .build());
        // docs/operations.md:register:end
        return provider;
    }
}
