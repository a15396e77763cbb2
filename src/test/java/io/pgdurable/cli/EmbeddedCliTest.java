package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The zero-install path: without --db the CLI starts its own PostgreSQL and stops it before returning. */
class EmbeddedCliTest {
    private static final Pattern EMBEDDED_URL =
            Pattern.compile("using an embedded throw-away database at (jdbc:postgresql://localhost:(\\d+)/\\S+)");

    @Test
    void status_without_db_starts_and_stops_an_embedded_postgresql() {
        PgDurableCliTest.Result r = PgDurableCliTest.cli("status");
        assertEquals(0, r.code(), r.all());
        Matcher m = EMBEDDED_URL.matcher(r.out());
        assertTrue(m.find(), r.out());
        assertTrue(r.out().contains("schema:       pgdurable: missing or not migrated"), r.out());
        assertTrue(r.out().contains("queue depths: n/a"), r.out());
        assertTrue(r.out().contains(StatusCommand.EMBEDDED_HINT), r.out());

        // It ran on that server, and the server is gone now.
        String url = m.group(1);
        SQLException refused = assertThrows(SQLException.class, () -> DriverManager.getConnection(url).close(),
                "embedded PostgreSQL on port " + m.group(2) + " still accepts connections after the command");
        assertTrue(refused.getSQLState() != null && refused.getSQLState().startsWith("08"),
                refused.getSQLState() + " " + refused.getMessage());
    }
}
