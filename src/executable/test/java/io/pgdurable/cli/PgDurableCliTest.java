package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.WorkItem;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the CLI in-process against the test database, each test in schemas of its own. */
class PgDurableCliTest {
    private final List<String> schemas = new ArrayList<>();

    /** One CLI invocation's exit code and captured streams. */
    record Result(int code, String out, String err) {
        String all() {
            return out + err;
        }
    }

    static Result cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = PgDurableCli.run(new PrintWriter(out), new PrintWriter(err), args);
        return new Result(code, out.toString(), err.toString());
    }

    private String schema() {
        String s = TestDatabase.newSchemaName("cli");
        schemas.add(s);
        return s;
    }

    @AfterEach
    void dropSchemas() {
        schemas.forEach(TestDatabase::dropSchema);
    }

    private static boolean schemaExists(String schema) throws SQLException {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_namespace WHERE nspname = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) == 1;
            }
        }
    }

    /** The newest successfully applied version, read from the ledger directly. */
    /** The CLI lists versions comma-separated, in order. */
    private static String join(List<?> versions) {
        return versions.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(", "));
    }

    private static String ledgerVersion(String schema) throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT version FROM " + Identifiers.quote(schema)
                     + ".pgdurable_schema_history WHERE success AND version IS NOT NULL "
                     + "ORDER BY installed_rank DESC LIMIT 1")) {
            assertTrue(rs.next(), "ledger of " + schema + " is empty");
            return rs.getString(1);
        }
    }

    @Test
    void status_on_a_missing_schema_reports_it_and_runs_no_ddl() throws Exception {
        String schema = schema();
        Result r = cli("status", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, r.code(), r.all());
        assertTrue(r.out().contains("schema:       " + schema + ": missing or not migrated"), r.out());
        assertTrue(r.out().contains("version:      none"), r.out());
        assertTrue(r.out().contains("pending:      1"), r.out());
        assertTrue(r.out().contains("(all)"), r.out());
        assertTrue(r.out().contains("queue depths: n/a"), r.out());
        assertTrue(r.out().contains("clock offset: n/a (schema not migrated)"), r.out());
        assertFalse(r.out().contains("embedded"), r.out());
        assertEquals("", r.err());

        Result j = cli("status", "--json", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, j.code(), j.all());
        Map<String, Object> json = Json.parseObject(j.out().trim());
        assertEquals(schema, json.get("schema"));
        assertEquals(false, json.get("migrated"));
        assertEquals(false, json.get("upToDate"));
        assertNull(json.get("currentVersion"));
        assertTrue(json.containsKey("queueDepths"));
        assertNull(json.get("queueDepths"));
        List<?> pending = (List<?>) json.get("pending");
        assertEquals("1", pending.get(0));
        assertTrue(r.out().contains("pending:      " + join(pending) + " (all)"), r.out());

        assertFalse(schemaExists(schema), "status must not create the schema");
    }

    @Test
    void migrate_then_status_shows_an_up_to_date_schema_with_empty_queues() throws Exception {
        String schema = schema();
        Result before = cli("status", "--json", "--db", TestDatabase.url(), "--schema", schema);
        List<?> pending = (List<?>) Json.parseObject(before.out().trim()).get("pending");
        Result m = cli("migrate", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, m.code(), m.all());
        String version = ledgerVersion(schema);
        assertEquals(pending.get(pending.size() - 1), version, "the last pending migration is the version reached");
        assertTrue(m.out().contains("applied " + pending.size() + " migration(s): " + join(pending) + "\n"), m.out());
        assertTrue(m.out().contains("schema " + schema + " is at version " + version + " (up to date)"), m.out());

        Result again = cli("migrate", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, again.code(), again.all());
        assertTrue(again.out().contains("nothing to apply"), again.out());
        assertEquals(version, ledgerVersion(schema));

        Result s = cli("status", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, s.code(), s.all());
        assertTrue(s.out().contains(schema + ": up to date"), s.out());
        assertTrue(s.out().contains("version:      " + version + "\n"), s.out());
        assertTrue(s.out().contains("pending:      none"), s.out());
        assertTrue(s.out().contains("queue depths: orchestrator 0, worker 0"), s.out());
        // The server runs on this machine: one clock, so the offset is the measurement's own error.
        assertTrue(s.out().contains(" ms (this machine's clock minus the server's; within the default bounds)"),
                s.out());

        Result j = cli("status", "--json", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, j.code(), j.all());
        Map<String, Object> json = Json.parseObject(j.out().trim());
        assertEquals(true, json.get("migrated"));
        assertEquals(true, json.get("upToDate"));
        assertEquals(version, json.get("currentVersion"));
        assertEquals(List.of(), json.get("pending"));
        @SuppressWarnings("unchecked")
        Map<String, Object> depths = (Map<String, Object>) json.get("queueDepths");
        assertNotNull(depths, j.out());
        assertEquals(0L, depths.get("orchestrator"));
        assertEquals(0L, depths.get("worker"));
        double offsetMs = ((Number) json.get("clockOffsetMs")).doubleValue();
        assertTrue(Math.abs(offsetMs) < 50, "one machine's clock against itself: " + offsetMs + " ms");
    }

    @Test
    void status_counts_queued_messages() {
        String schema = schema();
        assertEquals(0, cli("migrate", "--db", TestDatabase.url(), "--schema", schema).code());
        try (PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema).build())) {
            p.enqueueForOrchestrator(new WorkItem.StartOrchestration("i1", "O", "{}", "1.0.0"), null);
            p.enqueueForOrchestrator(new WorkItem.StartOrchestration("i2", "O", "{}", "1.0.0"), null);
            p.enqueueForWorker(new WorkItem.ActivityExecute("i1", 1, 1, "A", "{}"));
        }
        Result s = cli("status", "--db", TestDatabase.url(), "--schema", schema);
        assertEquals(0, s.code(), s.all());
        assertTrue(s.out().contains("queue depths: orchestrator 2, worker 1"), s.out());
    }

    @Test
    void an_unreachable_database_exits_1_with_a_clear_message_and_no_password() {
        // Port 1 refuses connections at once; the password must never be echoed.
        String url = "jdbc:postgresql://127.0.0.1:1/test?user=postgres&password=secret";
        for (String command : List.of("status", "migrate", "activate", "serve")) {
            Result r = cli(command, "--db", url, "--schema", "cli_unreachable");
            assertEquals(1, r.code(), command + ": " + r.all());
            // every command opens its pool the provider's way, so they all say the same
            assertTrue(r.err().startsWith("error: connect: cannot open a connection pool to "), command + ": "
                    + r.err());
            assertEquals(1, r.err().strip().lines().count(), command + ": one line: " + r.err());
            assertTrue(r.err().contains("127.0.0.1:1"), r.err());
            assertTrue(r.err().contains("refused"), "the driver's reason is kept: " + r.err());
            assertTrue(r.err().contains("password=***"), r.err());
            assertTrue(r.err().trim().endsWith("(retryable)"), r.err());
            assertFalse(r.all().contains("secret"), r.all());
        }
    }

    @Test
    void a_host_name_that_does_not_resolve_is_a_permanent_error() {
        // 64 characters in a label: the resolver refuses the name without asking a name server (SqlErrorsTest)
        String url = "jdbc:postgresql://" + "h".repeat(64) + ".invalid:5432/test?user=postgres";
        for (String command : List.of("status", "migrate", "serve")) {
            Result r = cli(command, "--db", url);
            assertEquals(1, r.code(), command + ": " + r.all());
            assertTrue(r.err().startsWith("error: connect: cannot open a connection pool to "), r.err());
            assertTrue(r.err().contains("UnknownHostException"), "the driver's reason is kept: " + r.err());
            assertFalse(r.err().contains("(retryable)"), command + " called an unknown host retryable: " + r.err());
        }
    }

    /**
     * A server that checks passwords: the test server trusts every local login, so this one is an embedded server
     * of its own, with scram-sha-256 for one role and a pg_hba.conf {@code reject} for another.
     */
    @Test
    void a_refused_login_is_a_permanent_error_for_every_command(@TempDir Path dir) throws Exception {
        try (EmbeddedPostgres pg = EmbeddedPostgres.builder().setDataDirectory(dir.resolve("pg")).start()) {
            String base = "jdbc:postgresql://127.0.0.1:" + pg.getPort() + "/postgres";
            try (Connection c = DriverManager.getConnection(base + "?user=postgres");
                 Statement st = c.createStatement()) {
                st.execute("CREATE ROLE pgdurable_pw LOGIN PASSWORD 'right-password'");
                st.execute("CREATE ROLE pgdurable_rejected LOGIN");
                Path hba;
                try (ResultSet rs = st.executeQuery("SHOW hba_file")) {
                    rs.next();
                    hba = Path.of(rs.getString(1));
                }
                Files.writeString(hba, "host all pgdurable_pw 127.0.0.1/32 scram-sha-256\n"
                        + "host all pgdurable_rejected 127.0.0.1/32 reject\n" + Files.readString(hba));
                st.execute("SELECT pg_reload_conf()");
            }
            String wrong = base + "?user=pgdurable_pw&password=not-the-password";
            awaitLoginRefused(wrong, "28P01");
            for (String command : List.of("status", "migrate", "activate", "serve")) {
                Result r = cli(command, "--db", wrong);
                assertEquals(1, r.code(), command + ": " + r.all());
                assertTrue(r.err().contains("password authentication failed for user \"pgdurable_pw\""),
                        command + ": " + r.err());
                assertFalse(r.err().contains("(retryable)"), command + " called a wrong password retryable: "
                        + r.err());
                assertFalse(r.all().contains("not-the-password"), r.all());
            }
            String rejected = base + "?user=pgdurable_rejected";
            awaitLoginRefused(rejected, "28000");
            Result r = cli("status", "--db", rejected);
            assertEquals(1, r.code(), r.all());
            assertTrue(r.err().contains("pg_hba.conf rejects connection"), r.err());
            assertFalse(r.err().contains("(retryable)"), r.err());

            Result right = cli("status", "--db", base + "?user=pgdurable_pw&password=right-password");
            assertEquals(0, right.code(), "only the password was wrong: " + right.all());
        }
    }

    /** Until the server has reloaded pg_hba.conf (it does so asynchronously), a login may still be trusted. */
    private static void awaitLoginRefused(String url, String state) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            try {
                DriverManager.getConnection(url).close();
            } catch (SQLException e) {
                assertEquals(state, e.getSQLState(), e.toString());
                return;
            }
            assertTrue(System.nanoTime() < deadline, "the server still lets " + url + " in after reloading");
            Thread.sleep(20);
        }
    }

    @Test
    void redaction_masks_passwords_and_keeps_the_rest_of_a_message() {
        assertEquals("cannot connect to jdbc:postgresql://h:5/db?user=u&password=***&ssl=true: Connection refused.",
                PgDurableCli.redact("cannot connect to jdbc:postgresql://h:5/db?user=u&password=secret&ssl=true: "
                        + "Connection refused."));
        assertEquals("at jdbc:postgresql://h/db?password=***: refused; other password=*** here",
                PgDurableCli.redact("at jdbc:postgresql://h/db?password=secret: refused; other password=secret here"));
        assertEquals("url 'jdbc:postgresql://u:***@h/db' rejected",
                PgDurableCli.redact("url 'jdbc:postgresql://u:secret@h/db' rejected"));
    }

    /** The errors name the option the user typed, not the library's setting behind it (jdbcUrl, directUrl). */
    @Test
    void a_url_that_is_not_postgresql_is_a_usage_error_naming_the_option_without_the_password() {
        for (String command : List.of("status", "migrate", "activate", "serve", "bench", "chaos")) {
            Result r = cli(command, "--db", "jdbc:mysql://localhost/x?password=secret");
            assertEquals(2, r.code(), command + ": " + r.all());
            assertEquals("error: --db must start with 'jdbc:postgresql:', was 'jdbc:mysql://localhost/x?password=***' "
                    + "(see 'pgdurable " + command + " --help')", r.err().strip());
            assertFalse(r.all().contains("secret"), r.all());
        }
        Result direct = cli("serve", "--db", TestDatabase.url(), "--direct-db", "postgres://localhost/x");
        assertEquals(2, direct.code(), direct.all());
        assertEquals("error: --direct-db must start with 'jdbc:postgresql:', was 'postgres://localhost/x' (see "
                + "'pgdurable serve --help')", direct.err().strip());
    }

    @Test
    void a_url_the_driver_cannot_read_is_a_usage_error_naming_it() {
        Result r = cli("status", "--db", "jdbc:postgresql://127.0.0.1:54x32/test?password=secret");
        assertEquals(2, r.code(), r.all());
        assertEquals("error: --db is not a URL the PostgreSQL driver can read (check the host, the port and the "
                + "parameters), was 'jdbc:postgresql://127.0.0.1:54x32/test?password=***' (see 'pgdurable status "
                + "--help')", r.err().strip());
        assertFalse(r.all().contains("No suitable driver"), r.all());
    }

    /** pgjdbc would read {@code user:password@} as part of the host name and fail with an unknown host. */
    @Test
    void a_url_with_the_user_before_the_host_is_a_usage_error_saying_how_to_pass_it() {
        Result r = cli("status", "--db", "jdbc:postgresql://app:secret@127.0.0.1:5432/test");
        assertEquals(2, r.code(), r.all());
        assertEquals("error: --db has a user (and password) before the host, which the PostgreSQL JDBC driver does "
                + "not read: pass them as parameters instead, jdbc:postgresql://HOST:PORT/DATABASE?user=NAME&"
                + "password=***, was 'jdbc:postgresql://app:***@127.0.0.1:5432/test' (see 'pgdurable status --help')",
                r.err().strip());
        assertFalse(r.all().contains("secret"), r.all());
    }

    @Test
    void serve_options_out_of_range_are_usage_errors_naming_the_option() {
        Result pool = cli("serve", "--db", TestDatabase.url(), "--pool-size", "1");
        assertEquals(2, pool.code(), pool.all());
        assertEquals("error: --pool-size must be in 2..1000 (long polling needs two connections at least), was 1 "
                + "(see 'pgdurable serve --help')", pool.err().strip());
        Result port = cli("serve", "--db", TestDatabase.url(), "--port", "70000");
        assertEquals(2, port.code(), port.all());
        assertEquals("error: --port must be in 0..65535, was 70000 (see 'pgdurable serve --help')",
                port.err().strip());
    }

    @Test
    void a_missing_database_is_a_permanent_error_for_every_command() {
        String missing = TestDatabase.url().replaceFirst("^(jdbc:postgresql://[^/]+/)[^?]*", "$1pgdurable_no_such_db");
        for (String command : List.of("status", "migrate", "serve")) {
            Result r = cli(command, "--db", missing);
            assertEquals(1, r.code(), command + ": " + r.all());
            assertTrue(r.err().startsWith("error: ") && r.err().contains("pgdurable_no_such_db"), r.err());
            assertFalse(r.err().contains("(retryable)"), command + " called a missing database retryable: " + r.err());
            assertEquals(1, r.err().strip().lines().count(), command + ": one line: " + r.err());
        }
    }

    @Test
    void usage_errors_exit_2() {
        Result unknownOption = cli("status", "--no-such-option");
        assertEquals(2, unknownOption.code(), unknownOption.all());
        assertEquals("error: Unknown option: '--no-such-option' (see 'pgdurable status --help')",
                unknownOption.err().strip(), "one line, no usage text");

        Result unknownCommand = cli("frobnicate");
        assertEquals(2, unknownCommand.code(), unknownCommand.all());
        assertEquals("error: 'frobnicate' is not a command; the commands are migrate, activate, status, bench, "
                + "serve, chaos (see 'pgdurable --help')", unknownCommand.err().strip(), "nothing close to suggest");

        Result typo = cli("stauts", "--db", TestDatabase.url());
        assertEquals(2, typo.code(), typo.all());
        assertEquals(List.of("error: 'stauts' is not a command; the commands are migrate, activate, status, bench, "
                + "serve, chaos (see 'pgdurable --help')", "Did you mean: pgdurable status?"),
                typo.err().strip().lines().toList());
        assertEquals("", typo.out());
        for (String[] typed : List.of(new String[] {"serv", "serve"}, new String[] {"bnech", "bench"},
                new String[] {"migrat", "migrate"}, new String[] {"sta", "status"})) {
            Result r = cli(typed[0]);
            assertTrue(r.err().strip().endsWith("\nDid you mean: pgdurable " + typed[1] + "?"), r.err());
        }
        Result option = cli("status", "--sch", "x");
        assertEquals(2, option.code(), option.all());
        assertTrue(option.err().strip().endsWith("\nPossible solutions: --schema"), option.err());

        Result none = cli();
        assertEquals(2, none.code(), none.all());
        assertEquals("error: a command is required, one of: migrate, activate, status, bench, serve, chaos "
                + "(see 'pgdurable --help')", none.err().strip());

        Result badSchema = cli("migrate", "--db", TestDatabase.url(), "--schema", "no such; schema");
        assertEquals(2, badSchema.code(), badSchema.all());
        assertTrue(badSchema.err().contains("schema"), badSchema.err());
    }

    @Test
    void embedded_and_output_options_that_contradict_each_other_are_usage_errors(@TempDir Path dir)
            throws Exception {
        Result both = cli("status", "--db", TestDatabase.url(), "--data-dir", dir.toString());
        assertEquals(2, both.code(), both.all());
        assertEquals("error: --db and --data-dir exclude each other: --data-dir is where the embedded PostgreSQL "
                + "keeps its data when there is no --db (see 'pgdurable status --help')", both.err().strip());

        Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
        Result notADir = cli("migrate", "--data-dir", file.toString());
        assertEquals(2, notADir.code(), notADir.all());
        assertEquals("error: --data-dir must name a directory, and " + file + " is a file (see 'pgdurable migrate "
                + "--help')", notADir.err().strip());

        for (String other : List.of("--db", "--data-dir")) {
            Result ephemeral = cli("serve", "--ephemeral", other, other.equals("--db") ? TestDatabase.url()
                    : dir.toString());
            assertEquals(2, ephemeral.code(), ephemeral.all());
            assertEquals("error: --ephemeral excludes --db and --data-dir: it starts a throw-away embedded PostgreSQL "
                    + "(see 'pgdurable serve --help')", ephemeral.err().strip());
        }

        Result directAlone = cli("serve", "--direct-db", TestDatabase.url());
        assertEquals(2, directAlone.code(), directAlone.all());
        assertEquals("error: --direct-db needs --db: it is the direct route beside a transaction-pooling proxy "
                + "named by --db (see 'pgdurable serve --help')", directAlone.err().strip());

        Result benchOut = cli("bench", "--quick", "--db", TestDatabase.url(), "--out", file.toString());
        assertEquals(2, benchOut.code(), benchOut.all());
        assertEquals("error: --out must name a folder, and " + file + " is a file (see 'pgdurable bench --help')",
                benchOut.err().strip());
        assertEquals("", benchOut.out(), "nothing ran");
    }

    @Test
    void a_data_directory_that_cannot_be_created_is_one_line_naming_it(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "x");
        Path below = file.resolve("hub"); // a directory cannot be created under a file
        Result r = cli("status", "--data-dir", below.toString());
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().startsWith("error: embedded: cannot use " + below + " as the data directory: "), r.err());
        assertTrue(r.err().strip().endsWith("; pass --data-dir DIR, --db JDBC_URL or (serve) --ephemeral"), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }

    @Test
    void help_and_version() throws Exception {
        String pomVersion = pomVersion();
        for (String[] args : List.of(new String[] {"--version"}, new String[] {"-V"}, new String[] {"serve", "-V"})) {
            Result version = cli(args);
            assertEquals(0, version.code(), version.all());
            assertEquals("pgdurable " + pomVersion, version.out().trim(), String.join(" ", args));
        }

        Result help = cli("--help");
        assertEquals(0, help.code(), help.all());
        assertTrue(help.out().contains("migrate"), help.out());
        assertTrue(help.out().contains("status"), help.out());

        Result statusHelp = cli("status", "--help");
        assertEquals(0, statusHelp.code(), statusHelp.all());
        assertTrue(statusHelp.out().contains("--json"), statusHelp.out());
        assertTrue(statusHelp.out().contains("--db=JDBC_URL"), statusHelp.out());
        assertTrue(statusHelp.out().contains("--data-dir=DIR"), statusHelp.out());

        Result serveHelp = cli("serve", "--help");
        assertTrue(serveHelp.out().contains("--ephemeral") && serveHelp.out().contains("--data-dir=DIR"),
                serveHelp.out());

        Result benchHelp = cli("bench", "--help");
        assertTrue(benchHelp.out().contains("--out=DIR") && benchHelp.out().contains("(default: pgdurable-bench"),
                benchHelp.out());
        assertEquals(Path.of(System.getProperty("user.home"), ".pgdurable"), DataDirectory.defaultLocation());
    }

    /** The project's version as the pom in the working directory states it (its own, else its parent's). */
    static String pomVersion() throws Exception {
        org.w3c.dom.Element project = javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(Path.of(System.getProperty("user.dir"), "pom.xml").toFile()).getDocumentElement();
        for (String holder : List.of("project", "parent")) {
            org.w3c.dom.Element e = holder.equals("project") ? project : child(project, "parent");
            org.w3c.dom.Element v = e == null ? null : child(e, "version");
            if (v != null) {
                return v.getTextContent().trim();
            }
        }
        throw new AssertionError("pom.xml states no version");
    }

    private static org.w3c.dom.Element child(org.w3c.dom.Element parent, String name) {
        for (org.w3c.dom.Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof org.w3c.dom.Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        return null;
    }

    @Test
    void activate_enables_long_polling_and_status_shows_it() {
        String schema = schema();
        String db = TestDatabase.url();
        assertEquals(1, cli("activate", "--db", db, "--schema", schema).code(), "an unmigrated schema is refused");
        assertEquals(0, cli("migrate", "--db", db, "--schema", schema).code());
        String before = cli("status", "--db", db, "--schema", schema).out();
        assertTrue(before.contains("long polling: not activated"), before);
        assertTrue(before.contains("notify triggers: disabled (0/9)"), before);

        Result activated = cli("activate", "--db", db, "--schema", schema);
        assertEquals(0, activated.code(), activated.all());
        assertTrue(activated.out().contains("long polling activated"), activated.out());
        assertTrue(activated.out().contains("notify triggers enabled (9/9)"), activated.out());
        String after = cli("status", "--db", db, "--schema", schema).out();
        assertTrue(after.contains("long polling: activated"), after);
        assertTrue(after.contains("notify triggers: enabled (9/9)"), after);
        Map<String, Object> json = Json.parseObject(cli("status", "--db", db, "--schema", schema, "--json").out());
        assertEquals(Boolean.TRUE, json.get("longPollingActivated"));
        assertEquals(Map.of("enabled", 9L, "total", 9L), json.get("notifyTriggers"));

        assertEquals(0, cli("activate", "--off", "--db", db, "--schema", schema).code());
        String off = cli("status", "--db", db, "--schema", schema).out();
        assertTrue(off.contains("long polling: not activated"), off);
        assertTrue(off.contains("notify triggers: disabled (0/9)"), off);
    }
}
