package io.pgdurable.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ProviderException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The database one command runs against: the {@code --db} URL, or an embedded PostgreSQL started for the command.
 * Closing it closes the pool and stops the embedded server (a shutdown hook stops it too if the JVM is
 * interrupted first).
 */
final class Database implements AutoCloseable {
    private final String url;
    private final EmbeddedPostgres embedded;
    private final Thread shutdownHook;
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final PrintWriter err;
    private HikariDataSource pool;

    private Database(String url, EmbeddedPostgres embedded, PrintWriter err) {
        this.url = url;
        this.embedded = embedded;
        this.err = err;
        if (embedded != null) {
            shutdownHook = new Thread(this::stopEmbedded, "pgdurable-embedded-postgres-stop");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        } else {
            shutdownHook = null;
        }
    }

    /**
     * Opens the database named by {@code --db}, or starts an embedded one and says so on {@code notices}.
     */
    static Database open(DatabaseOptions options, PrintWriter notices, PrintWriter err) {
        if (options.db != null) {
            return new Database(options.db, null, err);
        }
        notices.println("no --db given: starting an embedded throw-away PostgreSQL (discarded on exit) ...");
        notices.flush();
        EmbeddedPostgres pg;
        try {
            pg = EmbeddedPostgres.builder().start();
        } catch (IOException | RuntimeException e) {
            throw new ProviderException("embedded", "could not start an embedded PostgreSQL: " + e.getMessage()
                    + "; pass --db JDBC_URL to use a running server", false, null, e);
        }
        Database db = new Database(pg.getJdbcUrl("postgres", "postgres"), pg, err);
        notices.println("using an embedded throw-away database at " + db.displayUrl());
        notices.flush();
        return db;
    }

    String url() {
        return url;
    }

    String displayUrl() {
        return PostgresProviderConfig.redactUrl(url);
    }

    boolean embedded() {
        return embedded != null;
    }

    /** A small pool (at most {@code size} connections) for this command; it fails fast when the database is down. */
    HikariDataSource pool(int size) {
        if (pool == null) {
            HikariConfig hc = new HikariConfig();
            hc.setJdbcUrl(url);
            hc.setPoolName("pgdurable-cli");
            hc.setMaximumPoolSize(size);
            hc.setMinimumIdle(1);
            hc.setConnectionTimeout(10_000);
            hc.setAutoCommit(true);
            hc.addDataSourceProperty("ApplicationName", "pgdurable-cli");
            try {
                pool = new HikariDataSource(hc);
            } catch (RuntimeException e) {
                SQLException sql = findSqlException(e);
                String state = sql == null ? null : sql.getSQLState();
                throw new ProviderException("connect", "cannot connect to " + displayUrl() + ": " + describe(e),
                        isTransient(state), state, e);
            }
        }
        return pool;
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.close();
        }
        if (embedded != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or about to run: it stops the server
            }
            stopEmbedded();
        }
    }

    private void stopEmbedded() {
        if (stopped.compareAndSet(false, true)) {
            try {
                embedded.close();
            } catch (IOException | RuntimeException e) {
                err.println("warning: could not stop the embedded PostgreSQL cleanly: " + e.getMessage());
                err.flush();
            }
        }
    }

    private static boolean isTransient(String state) {
        return state != null && (state.startsWith("08") || state.startsWith("53") || state.startsWith("57P"));
    }

    private static SQLException findSqlException(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException s) {
                return s;
            }
        }
        return null;
    }

    /** The most specific message of a connection failure: the driver's, plus its network cause when there is one. */
    private static String describe(Throwable e) {
        SQLException sql = findSqlException(e);
        Throwable base = sql != null ? sql : (e.getCause() != null ? e.getCause() : e);
        String text = base.getMessage() != null ? base.getMessage() : base.getClass().getSimpleName();
        Throwable cause = base.getCause();
        if (cause != null && !(cause instanceof SQLException) && cause.getMessage() != null
                && !text.contains(cause.getMessage())) {
            text += " (" + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")";
        }
        return PgDurableCli.redact(text);
    }
}
