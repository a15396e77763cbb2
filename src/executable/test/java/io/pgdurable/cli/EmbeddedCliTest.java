package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Json;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The zero-install path, in-process: without --db every command uses the embedded PostgreSQL of one data directory,
 * whose data outlives each command (each run here starts and stops its own server on it), and {@code serve
 * --ephemeral} keeps the throw-away server.
 */
class EmbeddedCliTest {
    private static final Pattern EMBEDDED_URL =
            Pattern.compile("using the embedded database at (jdbc:postgresql://localhost:(\\d+)/\\S+)");

    @TempDir
    Path dir;

    @Test
    void migrate_activate_and_status_keep_their_work_in_one_data_directory() throws Exception {
        String data = dir.resolve("hub").toString();
        PgDurableCliTest.Result fresh = PgDurableCliTest.cli("status", "--data-dir", data);
        assertEquals(0, fresh.code(), fresh.all());
        assertTrue(fresh.out().contains("creating the embedded PostgreSQL in " + dir.toRealPath().resolve("hub")
                .resolve(DataDirectory.PGDATA)), fresh.out());
        assertTrue(fresh.out().contains("schema:       pgdurable: missing or not migrated"), fresh.out());
        assertTrue(fresh.out().contains("(embedded, data kept in " + dir.toRealPath().resolve("hub") + ")"),
                fresh.out());
        assertStopped(fresh.out());

        PgDurableCliTest.Result migrate = PgDurableCliTest.cli("migrate", "--data-dir", data);
        assertEquals(0, migrate.code(), migrate.all());
        assertTrue(migrate.out().contains("starting the embedded PostgreSQL in "), migrate.out());
        assertTrue(migrate.out().contains("(up to date)"), migrate.out());

        // Activate after migrate on the default database: the sequence a newcomer runs first.
        PgDurableCliTest.Result activate = PgDurableCliTest.cli("activate", "--data-dir", data);
        assertEquals(0, activate.code(), activate.all());
        assertTrue(activate.out().contains("long polling activated"), activate.out());

        PgDurableCliTest.Result status = PgDurableCliTest.cli("status", "--data-dir", data);
        assertEquals(0, status.code(), status.all());
        assertTrue(status.out().contains("schema:       pgdurable: up to date"), status.out());
        assertTrue(status.out().contains("long polling: activated"), status.out());
        assertTrue(status.out().contains("queue depths: orchestrator 0, worker 0"), status.out());
        assertStopped(status.out());

        PgDurableCliTest.Result json = PgDurableCliTest.cli("status", "--json", "--data-dir", data);
        assertEquals(0, json.code(), json.all());
        Map<String, Object> doc = Json.parseObject(json.out().trim());
        assertEquals(true, doc.get("embedded"));
        assertEquals(dir.toRealPath().resolve("hub").toString(), doc.get("dataDirectory"));
        assertEquals(true, doc.get("upToDate"));
        assertTrue(json.err().contains("using the embedded database at"), "notices go to stderr: " + json.err());
        assertFalse(Files.exists(dir.resolve("hub/pgdata/postmaster.pid")), "the server was not stopped");
    }

    @Test
    void a_postmaster_pid_naming_a_process_that_is_not_postgres_does_not_block_the_start() throws Exception {
        String data = dir.resolve("stale").toString();
        assertEquals(0, PgDurableCliTest.cli("status", "--data-dir", data).code());
        // A killed server leaves its postmaster.pid; its pid may since belong to another process (here: this JVM),
        // which PostgreSQL would take for a running server.
        Path pidFile = dir.resolve("stale/pgdata/postmaster.pid");
        Files.writeString(pidFile, ProcessHandle.current().pid() + "\n" + dir.resolve("stale/pgdata") + "\n");
        PgDurableCliTest.Result r = PgDurableCliTest.cli("status", "--data-dir", data);
        assertEquals(0, r.code(), r.all());
        assertTrue(r.out().contains("schema:       pgdurable: missing or not migrated"), r.out());
        assertFalse(Files.exists(pidFile), "the server was not stopped");
    }

    @Test
    void serve_ephemeral_runs_on_a_throw_away_server_that_is_gone_after_the_stop() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        Thread serve = new Thread(() -> exit.complete(PgDurableCli.run(new PrintWriter(out, true),
                new PrintWriter(err, true), "serve", "--ephemeral", "--port", "0")), "serve-ephemeral");
        serve.start();
        Pattern throwAway = Pattern.compile("using an embedded throw-away database at (jdbc:postgresql://\\S+)");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!out.toString().contains("listening on") && !exit.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(25);
        }
        try {
            assertTrue(out.toString().contains("listening on"), "out=" + out + " err=" + err);
        } finally {
            serve.interrupt();
        }
        assertEquals(0, exit.get(60, TimeUnit.SECONDS), "err=" + err);
        Matcher m = throwAway.matcher(out.toString());
        assertTrue(m.find(), out.toString());
        String url = m.group(1);
        SQLException refused = assertThrows(SQLException.class, () -> DriverManager.getConnection(url).close(),
                "the throw-away server still accepts connections after serve stopped");
        assertTrue(refused.getSQLState() != null && refused.getSQLState().startsWith("08"), refused.getMessage());
    }

    /** The command ran on the server it named, and that server is gone now. */
    private static void assertStopped(String out) {
        Matcher m = EMBEDDED_URL.matcher(out);
        assertTrue(m.find(), out);
        String url = m.group(1);
        SQLException refused = assertThrows(SQLException.class, () -> DriverManager.getConnection(url).close(),
                "embedded PostgreSQL on port " + m.group(2) + " still accepts connections after the command");
        assertTrue(refused.getSQLState() != null && refused.getSQLState().startsWith("08"),
                refused.getSQLState() + " " + refused.getMessage());
    }
}
