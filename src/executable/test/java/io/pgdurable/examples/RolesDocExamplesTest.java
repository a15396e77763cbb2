package io.pgdurable.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.cli.PgDurableCli;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.postgres.TestRoles;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * docs/roles.md cannot rot: its {@code sql} blocks run in order (the first as a superuser, the others as the owner
 * role), its migrate and activate commands run through the CLI as the owner, and a provider connected as the
 * runtime role with {@code VERIFY_ONLY} and long polling works while the role's DDL is refused.
 */
class RolesDocExamplesTest {
    private static final Path PAGE = Path.of("docs/roles.md");
    private static final String HUB = "billing_hub";
    private static final String OWNER = "billing_owner";
    private static final String RUNTIME = "billing_runtime";
    private static final Duration LOCK = Duration.ofSeconds(30);

    @Test
    void the_page_sets_up_a_hub_that_the_runtime_role_can_use_but_not_alter() throws Exception {
        String page = Files.readString(PAGE);
        List<String> sql = DocBlocks.of(page, "sql");
        assertEquals(3, sql.size(), "the page's sql blocks: administrator, owner's grants, grants after migrating");
        dropExampleObjects();
        try {
            run(TestDatabase.url(), sql.get(0));
            run(TestRoles.url(OWNER), sql.get(1));
            List<String> commands = DocBlocks.of(page, "sh").get(0).lines().toList();
            assertEquals(2, commands.size(), "the page's commands: migrate, activate");
            for (String command : commands) {
                assertEquals(0, cli(command), command);
            }
            run(TestRoles.url(OWNER), sql.get(2));
            assertTrue(page.contains(".migrationPolicy(MigrationPolicy.VERIFY_ONLY)"), "step 5's configuration");

            PostgresProviderConfig runtime = TestDatabase.config(HUB).jdbcUrl(TestRoles.url(RUNTIME))
                    .migrationPolicy(MigrationPolicy.VERIFY_ONLY).longPolling(true).build();
            try (PostgresProvider app = PostgresProvider.create(runtime);
                 PostgresProvider ownerSide = PostgresProvider.create(runtime.toBuilder()
                         .jdbcUrl(TestRoles.url(OWNER)).longPolling(false).poolSize(1).build())) {
                CompletableFuture<Optional<FetchedWorkItem>> parked = CompletableFuture.supplyAsync(() ->
                        app.fetchWorkItem(LOCK, Duration.ofSeconds(20), null, TagFilter.defaultOnly()));
                ownerSide.enqueueForWorker(new WorkItem.ActivityExecute("inv-1", 1, 2, "Bill", "{}"));
                FetchedWorkItem work = parked.get(20, TimeUnit.SECONDS).orElseThrow();
                assertEquals("Bill", ((WorkItem.ActivityExecute) work.item()).name());
                app.ackWorkItem(work.lockToken(), null);
                app.enqueueForWorker(new WorkItem.ActivityExecute("inv-2", 1, 3, "Bill", "{}"));
                assertEquals(1, app.asManagementCapability().orElseThrow().getQueueDepths().workerQueue());
            }
            try (Connection c = TestRoles.connect(RUNTIME); Statement st = c.createStatement()) {
                for (String ddl : List.of(
                        "CREATE TABLE billing_hub.extra (id INT)",
                        "ALTER TABLE billing_hub.worker_queue ADD COLUMN extra INT",
                        "ALTER TABLE billing_hub.worker_queue ENABLE TRIGGER ALL",
                        "DROP FUNCTION billing_hub.long_polling_activated()")) {
                    SQLException refused = assertThrows(SQLException.class, () -> st.execute(ddl), ddl);
                    assertEquals("42501", refused.getSQLState(), ddl + ": " + refused.getMessage());
                }
            }
        } finally {
            dropExampleObjects();
        }
    }

    private static int cli(String command) {
        String[] words = command.trim().split("\\s+");
        assertEquals("java -jar pgdurable.jar", String.join(" ", List.of(words).subList(0, 3)), command);
        String[] args = List.of(words).subList(3, words.length).stream()
                .map(w -> w.startsWith("'jdbc:") ? TestRoles.url(OWNER) : w).toArray(String[]::new);
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = PgDurableCli.run(new PrintWriter(out), new PrintWriter(err), args);
        assertEquals(0, code, command + "\n" + out + err);
        return code;
    }

    private static void run(String url, String block) throws SQLException {
        try (Connection c = java.sql.DriverManager.getConnection(url); Statement st = c.createStatement()) {
            st.execute(block);
        } catch (SQLException e) {
            throw new AssertionError("docs/roles.md example failed: " + e.getMessage() + "\n" + block, e);
        }
    }

    private static void dropExampleObjects() throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS billing_hub CASCADE");
            for (String role : List.of(OWNER, RUNTIME)) {
                st.execute("DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + role + "') THEN "
                        + "EXECUTE 'DROP OWNED BY " + role + "'; EXECUTE 'DROP ROLE " + role + "'; END IF; END $$");
            }
        }
    }
}
