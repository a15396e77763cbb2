package io.pgdurable.chaos;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * A direct connection of the chaos run's own (the ledger writes, the kills), straight to the server and named
 * {@value #APPLICATION_NAME}, so no fault ever hits it. Reopened after a failure. Not thread-safe: one per thread.
 */
final class AdminConnection implements AutoCloseable {
    static final String APPLICATION_NAME = "pgdurable-chaos";

    private final String url;
    private Connection connection;

    AdminConnection(String url) {
        this.url = url;
    }

    Connection get() throws SQLException {
        if (connection == null) {
            Properties p = new Properties();
            p.setProperty("ApplicationName", APPLICATION_NAME);
            p.setProperty("connectTimeout", "5");
            p.setProperty("socketTimeout", "30");
            connection = DriverManager.getConnection(url, p);
        }
        return connection;
    }

    /** Drops a connection that failed; the next {@link #get()} opens a new one. */
    void reset() {
        close();
    }

    @Override
    public void close() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // it failed already
            }
            connection = null;
        }
    }
}
