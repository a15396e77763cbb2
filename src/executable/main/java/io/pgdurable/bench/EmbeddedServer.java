package io.pgdurable.bench;

import io.pgdurable.cli.EmbeddedStop;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The benchmark's default database: a throw-away embedded PostgreSQL with {@code pg_stat_statements} preloaded, so
 * statements are counted per statement on the server, and with PostgreSQL's durability defaults ({@code fsync},
 * {@code synchronous_commit} on), which the embedded server otherwise turns off. Stopped by {@link #close()} or, if the JVM exits first, by a
 * shutdown hook.
 */
public final class EmbeddedServer implements AutoCloseable {
    private final EmbeddedPostgres postgres;
    private final Thread hook;
    private final AtomicBoolean stopped = new AtomicBoolean();

    private EmbeddedServer(EmbeddedPostgres postgres) {
        this.postgres = postgres;
        this.hook = new Thread(this::stop, "pgdurable-bench-embedded-stop");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /**
     * Starts the server; with {@code statementStatistics} it preloads pg_stat_statements (tracking top-level and
     * utility statements).
     */
    public static EmbeddedServer start(boolean statementStatistics) throws IOException {
        // The embedded defaults turn durability off for test speed; a benchmark measures PostgreSQL's defaults.
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                .setServerConfig("max_connections", "300")
                .setServerConfig("fsync", "on")
                .setServerConfig("synchronous_commit", "on")
                .setServerConfig("full_page_writes", "on");
        if (statementStatistics) {
            builder.setServerConfig("shared_preload_libraries", "pg_stat_statements")
                    .setServerConfig("pg_stat_statements.max", "10000")
                    .setServerConfig("pg_stat_statements.track", "top")
                    .setServerConfig("pg_stat_statements.track_utility", "on");
        }
        return new EmbeddedServer(builder.start());
    }

    public String url() {
        return postgres.getJdbcUrl("postgres", "postgres");
    }

    @Override
    public void close() {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs
        }
        stop();
    }

    private void stop() {
        if (stopped.compareAndSet(false, true)) {
            try {
                EmbeddedStop.close(postgres);
            } catch (IOException | RuntimeException e) {
                System.err.println("warning: could not stop the embedded PostgreSQL cleanly: " + e.getMessage());
            }
        }
    }
}
