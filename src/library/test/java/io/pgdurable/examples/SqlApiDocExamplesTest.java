package io.pgdurable.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * docs/sql-api.md cannot rot: every {@code sql} block of the page runs, in order, on a freshly migrated hub of the
 * page's example schema {@code orders_hub}, and what the blocks enqueue is what a provider then fetches; the error
 * messages the page quotes are the ones the functions raise; the JDBC example is the compiled
 * {@link SqlApiJdbcExample}.
 */
class SqlApiDocExamplesTest {
    private static final Path PAGE = Path.of("docs/sql-api.md");
    private static final String HUB = "orders_hub";
    /** The other fixed names the examples create, dropped before and after like the hub. */
    private static final String APP_SCHEMA = "orders_app";
    private static final String ROLE = "orders_writer";
    private static final Duration LOCK = Duration.ofSeconds(30);

    @Test
    void every_sql_example_runs_in_order_and_has_the_documented_effect() throws Exception {
        String page = Files.readString(PAGE);
        List<String> blocks = DocBlocks.of(page, "sql");
        assertTrue(blocks.size() >= 10, "the page's sql examples: " + blocks.size());
        dropExampleObjects();
        try (PostgresProvider provider = PostgresProvider.create(TestDatabase.config(HUB).build())) {
            try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
                for (String block : blocks) {
                    try {
                        st.execute(block);
                    } catch (SQLException e) {
                        throw new AssertionError("docs/sql-api.md example failed: " + e.getMessage() + "\n" + block, e);
                    }
                }
            }
            assertDocumentedEffect(provider);
            assertJdbcExample(provider);
            assertQuotedErrors(page);
        } finally {
            dropExampleObjects();
        }
    }

    private static void assertDocumentedEffect(PostgresProvider provider) throws SQLException {
        // Everything the examples enqueued, in order; the rolled-back event and the refused call are not there.
        Map<WorkItem, Long> delays = new LinkedHashMap<>();
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT work_item, visible_at_ms - created_at_ms FROM " + HUB
                     + ".orchestrator_queue ORDER BY id")) {
            while (rs.next()) {
                delays.put(WorkItem.fromJson(rs.getString(1)), rs.getLong(2));
            }
        }
        WorkItem start42 = new WorkItem.StartOrchestration("order-42", "ProcessOrder", "{\"sku\": 7, \"qty\": 2}", null);
        WorkItem start43 = new WorkItem.StartOrchestration("order-43", "ProcessOrder", "{\"sku\": 9, \"qty\": 1}", "1.0.0");
        WorkItem paid42 = new WorkItem.ExternalRaised("order-42", "PaymentReceived", "{\"amount\": 1999}");
        WorkItem cancel43 = new WorkItem.CancelInstance("order-43", "customer withdrew the order");
        WorkItem note42 = new WorkItem.QueueMessage("order-42", "note", "\"gift wrap, please\"");
        WorkItem reminder42 = new WorkItem.ExternalRaised("order-42", "Reminder", "{}");
        WorkItem start44 = new WorkItem.StartOrchestration("order-44", "ProcessOrder", "{\"sku\" : 3, \"qty\" : 1}", null);
        WorkItem paid44 = new WorkItem.ExternalRaised("order-44", "PaymentReceived", "{\"amount\": 500}");
        assertEquals(List.of(start42, start43, paid42, cancel43, note42, reminder42, start44, paid44),
                new ArrayList<>(delays.keySet()));
        // "in ten minutes" and "tomorrow", from the transaction's start (now()), so a little less may remain
        assertTrue(Math.abs(delays.get(start43) - 600_000) < 60_000, "order-43 starts in ten minutes: "
                + delays.get(start43));
        assertTrue(Math.abs(delays.get(reminder42) - 86_400_000) < 60_000, "the reminder arrives tomorrow");

        // A provider fetches order-42 with what is due, then order-44; order-43 has not started yet.
        FetchedOrchestration first = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(List.of(start42, paid42, note42), first.item().messages());
        FetchedOrchestration second = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(List.of(start44, paid44), second.item().messages());
        assertTrue(provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).isEmpty());

        // The activity is for workers that take the tag 'mailer' only.
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).isEmpty());
        assertEquals(new WorkItem.ActivityExecute("order-42", 1, 5, "SendReceipt", "{\"to\": \"ann@example.com\"}",
                        null, "mailer"),
                provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.tags("mailer")).orElseThrow().item());

        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT value FROM " + HUB
                     + ".hub_settings WHERE name = 'sql_api_max_payload_bytes'")) {
            assertTrue(rs.next());
            assertEquals("1048576", rs.getString(1), "the limit example lowered the limit");
        }
    }

    private static void assertJdbcExample(PostgresProvider provider) throws IOException, SQLException {
        List<String> source = Files.readAllLines(Path.of("src/library/test/java/io/pgdurable/examples/SqlApiJdbcExample.java"));
        int begin = indexOf(source, "docs/sql-api.md:jdbc:begin") + 1;
        int end = indexOf(source, "docs/sql-api.md:jdbc:end");
        String indent = "        ";
        String snippet = source.subList(begin, end).stream()
                .map(l -> l.startsWith(indent) ? l.substring(indent.length()) : l.strip())
                .collect(Collectors.joining("\n"));
        assertTrue(DocBlocks.of(Files.readString(PAGE), "java").contains(snippet + "\n"),
                "docs/sql-api.md must show the JDBC example as compiled:\n" + snippet);

        try (Connection c = TestDatabase.connect()) {
            SqlApiJdbcExample.paymentReceived(c, "order-43", 4200);
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> SqlApiJdbcExample.paymentReceived(c, "", 1));
            assertTrue(refused.getMessage().contains("raise_event: p_instance_id must not be NULL or empty"),
                    refused.getMessage());
        }
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT work_item FROM " + HUB + ".orchestrator_queue "
                     + "ORDER BY id DESC LIMIT 1")) {
            assertTrue(rs.next());
            assertEquals(new WorkItem.ExternalRaised("order-43", "PaymentReceived", "{\"amount\": 4200}"),
                    WorkItem.fromJson(rs.getString(1)));
        }
    }

    /** Each message the page quotes under "Errors", and a call that raises it (the limit back at its default). */
    private static void assertQuotedErrors(String page) throws SQLException {
        Map<String, String> calls = new LinkedHashMap<>();
        calls.put("start_orchestration: p_instance_id must not be NULL or empty",
                "SELECT orders_hub.start_orchestration(NULL, 'ProcessOrder', '{}')");
        calls.put("raise_event: p_data must not be NULL (an empty string is allowed)",
                "SELECT orders_hub.raise_event('order-42', 'PaymentReceived', NULL)");
        calls.put("enqueue_activity: p_execution_id must be at least 1 (ids start at 1), is -1",
                "SELECT orders_hub.enqueue_activity('order-42', -1, 5, 'SendReceipt', '{}')");
        calls.put("enqueue_activity: p_tag must be NULL (absent) or non-empty",
                "SELECT orders_hub.enqueue_activity('order-42', 1, 5, 'SendReceipt', '{}', p_tag => '')");
        calls.put("enqueue_work_item: p_work_item is not valid JSON: invalid input syntax for type json "
                + "(Token \"oops\" is invalid.)", "SELECT orders_hub.enqueue_work_item('oops')");
        calls.put("enqueue_work_item: p_work_item has unknown kind \"Start\"; the kinds are StartOrchestration, "
                + "ContinueAsNew, ...", "SELECT orders_hub.enqueue_work_item('{\"Start\": {}}')");
        calls.put("enqueue_work_item: p_work_item field TimerFired.fire_at_ms must be an integer (no fraction or "
                + "exponent, within BIGINT), got 1.5", "SELECT orders_hub.enqueue_work_item('{\"TimerFired\": "
                + "{\"instance\": \"order-42\", \"execution_id\": 1, \"id\": 6, \"fire_at_ms\": 1.5}}')");
        calls.put("raise_event: p_data is 5000000 bytes, above the limit of 4194304 bytes (hub_settings row "
                + "sql_api_max_payload_bytes)", "SELECT orders_hub.raise_event('order-42', 'PaymentReceived', "
                + "repeat('x', 5000000))");
        String quoted = page.substring(page.indexOf("## Errors"));
        quoted = quoted.substring(0, quoted.indexOf("## Limits"));
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute("UPDATE orders_hub.hub_settings SET value = '4194304' WHERE name = 'sql_api_max_payload_bytes'");
            for (Map.Entry<String, String> e : calls.entrySet()) {
                assertTrue(quoted.contains(e.getKey() + "\n"), "the page quotes: " + e.getKey());
                SQLException refused = assertThrows(SQLException.class, () -> st.execute(e.getValue()), e.getValue());
                assertEquals("PD002", refused.getSQLState(), refused.getMessage());
                String expected = e.getKey().endsWith("...") ? e.getKey().substring(0, e.getKey().length() - 3)
                        : e.getKey();
                String message = refused.getMessage().replaceFirst("^ERROR: ", "").lines().findFirst().orElse("");
                assertTrue(e.getKey().endsWith("...") ? message.startsWith(expected) : message.equals(expected),
                        "raised: " + message + "\nquoted: " + e.getKey());
            }
        }
    }

    /** The bodies of the page's fenced blocks of one language, in order. */
    private static int indexOf(List<String> lines, String marker) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(marker)) {
                return i;
            }
        }
        throw new AssertionError("marker " + marker + " not found");
    }

    private static void dropExampleObjects() throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + HUB + " CASCADE");
            st.execute("DROP SCHEMA IF EXISTS " + APP_SCHEMA + " CASCADE");
            // With the schemas gone the role holds no grants in this database and can be dropped.
            st.execute("DROP ROLE IF EXISTS " + ROLE);
        }
    }
}
