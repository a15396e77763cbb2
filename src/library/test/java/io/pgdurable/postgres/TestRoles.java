package io.pgdurable.postgres;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;

/**
 * Connections as roles other than the test database's superuser: the least-privilege tests (docs/roles.md). The
 * role's URL keeps the test database's host, port and database and replaces only the user.
 */
public final class TestRoles {
    /** The owner and runtime roles every role-mode conformance schema uses; created once per cluster. */
    public static final String OWNER = "pgdurable_test_owner";
    public static final String RUNTIME = "pgdurable_test_runtime";

    private static volatile boolean created;

    private TestRoles() {}

    /** The test database's URL with {@code role} as the user. */
    public static String url(String role) {
        Properties p = org.postgresql.Driver.parseURL(TestDatabase.url(), new Properties());
        if (p == null) {
            throw new IllegalStateException("the test database URL cannot be parsed");
        }
        String host = p.getProperty("PGHOST").split(",")[0];
        String port = p.getProperty("PGPORT").split(",")[0];
        return "jdbc:postgresql://" + host + ":" + port + "/" + p.getProperty("PGDBNAME") + "?user=" + role;
    }

    public static Connection connect(String role) throws SQLException {
        return DriverManager.getConnection(url(role));
    }

    /** Creates {@link #OWNER} and {@link #RUNTIME} if missing (several test JVMs may race: a duplicate is fine). */
    public static void ensureTestRoles() {
        if (created) {
            return;
        }
        synchronized (TestRoles.class) {
            if (created) {
                return;
            }
            for (String role : new String[] {OWNER, RUNTIME}) {
                try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
                    st.execute("DO $$ BEGIN CREATE ROLE " + Identifiers.quote(role) + " LOGIN; "
                            + "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$");
                } catch (SQLException e) {
                    throw new IllegalStateException("could not create test role " + role, e);
                }
            }
            created = true;
        }
    }
}
