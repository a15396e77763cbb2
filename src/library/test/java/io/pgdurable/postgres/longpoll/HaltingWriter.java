package io.pgdurable.postgres.longpoll;

import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.WorkItem;

/**
 * A writer process that dies right after its enqueue commits: no shutdown hook, no close, no announcement sent
 * after the fact. Run in a JVM of its own by {@link NotifyTriggersTest}:
 * {@code <jdbcUrl> <schema> <instance> <handOverAcrossProcesses>}.
 */
public final class HaltingWriter {
    private HaltingWriter() {}

    public static void main(String[] args) {
        PostgresProviderConfig config = PostgresProviderConfig.builder()
                .jdbcUrl(args[0])
                .schema(args[1])
                .poolSize(1)
                .migrationPolicy(MigrationPolicy.VERIFY_ONLY)
                .handOverAcrossProcesses(Boolean.parseBoolean(args[3]))
                .build();
        PostgresProvider provider = PostgresProvider.create(config);
        provider.enqueueForWorker(new WorkItem.ActivityExecute(args[2], 1, 1, "Halted", "{}"));
        System.out.println("committed");
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
