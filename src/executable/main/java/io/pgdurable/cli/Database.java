package io.pgdurable.cli;

import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.ProviderException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * The database one command runs against: the {@code --db} URL; else the embedded PostgreSQL of a data directory
 * ({@link DataDirectory}: kept between runs, shared by the commands of one user); else, for {@code serve
 * --ephemeral}, a throw-away embedded PostgreSQL. Closing it closes the pool and stops an embedded server this
 * command started. If the JVM is shut down first (SIGTERM, Ctrl-C), a shutdown hook gives the command time to close
 * it itself, so a server is stopped only after the work on it has been handed back.
 */
final class Database implements AutoCloseable {
    /** The command's own stop (serve's drain of at most 20 s) comes first; after this the hook stops the server. */
    private static final long SHUTDOWN_GRACE_SECONDS = 25;

    private final String url;
    private final EmbeddedPostgres throwAway;
    private final DataDirectory dataDirectory;
    private final Thread shutdownHook;
    private final CountDownLatch closed = new CountDownLatch(1);
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final PrintWriter err;
    private HikariDataSource pool;

    private Database(String url, EmbeddedPostgres throwAway, DataDirectory dataDirectory, PrintWriter err) {
        this.url = url;
        this.throwAway = throwAway;
        this.dataDirectory = dataDirectory;
        this.err = err;
        if (throwAway != null || (dataDirectory != null && dataDirectory.owned())) {
            shutdownHook = new Thread(this::stopOnShutdown, "pgdurable-embedded-postgres-stop");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        } else {
            shutdownHook = null;
        }
    }

    /**
     * Opens the database of a command other than {@code serve}: {@code --db}, else the data directory's embedded
     * server, started for the command or, when another pgdurable process runs it, shared with that process.
     */
    static Database open(DatabaseOptions options, String command, PrintWriter notices, PrintWriter err) {
        if (options.db != null) {
            return new Database(options.db, null, null, err);
        }
        return persistent(options, command, false, notices, err);
    }

    /**
     * Opens {@code serve}'s database: {@code --db}; else, with {@code ephemeral}, a throw-away embedded server;
     * else the data directory, which serve owns alone (a second serve on it is refused).
     */
    static Database openForServe(DatabaseOptions options, boolean ephemeral, PrintWriter notices, PrintWriter err) {
        if (options.db != null) {
            return new Database(options.db, null, null, err);
        }
        if (!ephemeral) {
            return persistent(options, "serve", true, notices, err);
        }
        notices.println("--ephemeral: starting an embedded throw-away PostgreSQL (discarded on exit) ...");
        notices.flush();
        EmbeddedPostgres pg;
        try {
            pg = EmbeddedPostgres.builder().setRegisterShutdownHook(false).start();
        } catch (IOException | RuntimeException e) {
            throw new ProviderException("embedded", "could not start an embedded PostgreSQL: " + e.getMessage()
                    + "; pass --db JDBC_URL to use a running server", false, null, e);
        }
        Database db = new Database(pg.getJdbcUrl("postgres", "postgres"), pg, null, err);
        notices.println("using an embedded throw-away database at " + db.displayUrl());
        notices.flush();
        return db;
    }

    private static Database persistent(DatabaseOptions options, String command, boolean exclusive,
                                       PrintWriter notices, PrintWriter err) {
        Path dir = options.dataDir != null ? options.dataDir : DataDirectory.defaultLocation();
        notices.println("no --db given: the embedded PostgreSQL with its data in " + dir.toAbsolutePath()
                + (options.dataDir != null ? "" : " (--data-dir to choose another)"));
        notices.flush();
        DataDirectory data = DataDirectory.open(dir, command, exclusive, notices);
        Database db = new Database(data.url(), null, data, err);
        notices.println("using the embedded database at " + db.displayUrl() + " (" + db.embeddedDescription() + ")");
        notices.flush();
        return db;
    }

    String url() {
        return url;
    }

    String displayUrl() {
        return JdbcUrls.redact(url);
    }

    boolean embedded() {
        return throwAway != null || dataDirectory != null;
    }

    /** The data directory of an embedded server that keeps its data, or null. */
    Path dataDirectory() {
        return dataDirectory == null ? null : dataDirectory.path();
    }

    /** How an embedded database lives, for the commands' output; null for {@code --db}. */
    String embeddedDescription() {
        if (throwAway != null) {
            return "embedded, throw-away";
        }
        if (dataDirectory == null) {
            return null;
        }
        return "embedded, data kept in " + dataDirectory.path()
                + (dataDirectory.owned() ? "" : ", server run by " + dataDirectory.ownerDescription());
    }

    /**
     * A small pool (at most {@code size} connections) for this command, opened the way the provider opens its own,
     * so a refused login or an unreachable server is reported and classified the same by every command.
     */
    /**
     * The migrator of {@code schema} on this database, on a pool of three: the migrator holds one connection for its
     * advisory lock while Flyway works on another.
     */
    SchemaMigrator migrator(String schema) {
        DataSource ds = pool(3);
        return new SchemaMigrator(ds, PostgresProviderConfig.builder().dataSource(ds).schema(schema).build());
    }

    HikariDataSource pool(int size) {
        if (pool == null) {
            pool = PostgresProvider.openPool(PostgresProviderConfig.builder().jdbcUrl(url).poolSize(size).build());
        }
        return pool;
    }

    @Override
    public void close() {
        try {
            if (pool != null) {
                pool.close();
            }
            stopEmbedded();
        } finally {
            closed.countDown();
            if (shutdownHook != null) {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException shuttingDown) {
                    // the hook is running: it has seen the close
                }
            }
        }
    }

    private void stopOnShutdown() {
        try {
            if (!closed.await(SHUTDOWN_GRACE_SECONDS, TimeUnit.SECONDS)) {
                stopEmbedded();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopEmbedded();
        }
    }

    private void stopEmbedded() {
        if (!stopped.compareAndSet(false, true)) {
            return;
        }
        try {
            if (throwAway != null) {
                EmbeddedStop.close(throwAway);
            }
            if (dataDirectory != null) {
                dataDirectory.close();
            }
        } catch (IOException | RuntimeException e) {
            err.println("warning: could not stop the embedded PostgreSQL cleanly: " + e.getMessage());
            err.flush();
        }
    }
}
