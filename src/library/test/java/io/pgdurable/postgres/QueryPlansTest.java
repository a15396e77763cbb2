package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Every hot-path and per-instance statement reads through an index on a task hub of 100,000 instances. The plans
 * of the statements inside the functions are captured with auto_explain (nested statements, sent to the client as
 * notices) and written to target/query-plans.md under the preface of this test's golden file,
 * {@code query-plans.golden.md} beside it in the test resources: copying the output over the golden file records the
 * plans a change brings (docs/schema.md, "Query plans").
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QueryPlansTest {
    private static final int INSTANCES = 100_000;
    /** The plans as last recorded; its preface, above the marker, heads the generated file. */
    private static final String GOLDEN = "query-plans.golden.md";
    private static final List<String> TOKEN_TAKING = List.of("renew_work_item_lock", "ack_work_item",
            "abandon_work_item");
    private static final Pattern SEQ_SCAN = Pattern.compile("Seq Scan on (\\w+)");
    /** Whole-table aggregates: scanning is what they are asked to do. */
    private static final List<String> WHOLE_TABLE = List.of("get_system_metrics", "get_queue_depths");

    private String schema;
    private Statements sql;
    private Connection c;
    private final Map<String, String> plans = new LinkedHashMap<>();

    @BeforeAll
    void populate() throws SQLException {
        schema = TestDatabase.newSchemaName("plans");
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        sql = new Statements(schema);
        c = TestDatabase.connect();
        String s = Identifiers.quote(schema);
        try (Statement st = c.createStatement()) {
            st.execute("INSERT INTO " + s + ".instances (instance_id, orchestration_name, orchestration_version, "
                    + "current_execution_id, parent_instance_id, created_at_ms, updated_at_ms) "
                    + "SELECT 'inst-' || g, 'Orch', '1.0.0', CASE WHEN g % 10 = 0 THEN 3 ELSE 1 END, "
                    + "CASE WHEN g % 20 = 1 THEN 'inst-' || (g - 1) END, g, g FROM generate_series(1, " + INSTANCES
                    + ") g");
            st.execute("INSERT INTO " + s + ".executions (instance_id, execution_id, status, output, started_at_ms, "
                    + "completed_at_ms, pinned_version) SELECT i.instance_id, e, "
                    + "CASE WHEN e < i.current_execution_id OR i.created_at_ms % 3 = 0 THEN 'Completed' ELSE "
                    + "'Running' END, 'out', i.created_at_ms, i.created_at_ms + 5, 1000000 "
                    + "FROM " + s + ".instances i, generate_series(1, i.current_execution_id) e");
            st.execute("INSERT INTO " + s + ".history (instance_id, execution_id, event_id, event_type, event_data, "
                    + "created_at_ms) SELECT e.instance_id, e.execution_id, n, 'ExternalEvent', "
                    + "'{\"event_id\":' || n || ',\"type\":\"ExternalEvent\"}', 1 FROM " + s + ".executions e, "
                    + "generate_series(1, 3) n");
            st.execute("INSERT INTO " + s + ".orchestrator_queue (instance_id, kind, work_item, visible_at_ms, "
                    + "created_at_ms) SELECT 'inst-' || (g * 37 % " + INSTANCES + " + 1), 'TimerFired', "
                    + "'{\"TimerFired\":{\"instance\":\"inst-' || (g * 37 % " + INSTANCES + " + 1) || '\","
                    + "\"execution_id\":1,\"id\":1,\"fire_at_ms\":0}}', CASE WHEN g % 10 = 0 THEN 1 ELSE "
                    + "9000000000000 END, 1 FROM generate_series(1, 5000) g");
            st.execute("INSERT INTO " + s + ".worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, "
                    + "execution_id, activity_id, tag) SELECT '{\"ActivityExecute\":{\"instance\":\"inst-' || g "
                    + "|| '\",\"execution_id\":1,\"id\":' || g || ',\"name\":\"A\",\"input\":\"{}\"}}', "
                    + "1, 1, 'inst-' || g, 1, g, CASE WHEN g % 2 = 0 THEN 'gpu' END FROM generate_series(1, 5000) g");
            st.execute("INSERT INTO " + s + ".kv_store SELECT instance_id, 'k', 'v', 1, 1 FROM " + s
                    + ".instances WHERE created_at_ms % 4 = 0");
            st.execute("INSERT INTO " + s + ".kv_delta SELECT instance_id, 'd', 'v', 1 FROM " + s
                    + ".instances WHERE created_at_ms % 4 = 1");
            st.execute("INSERT INTO " + s + ".sessions SELECT 'session-' || g, 'owner-' || (g % 50), "
                    + "CASE WHEN g % 2 = 0 THEN 9000000000000 ELSE 1 END, 1 FROM generate_series(1, 20000) g");
            st.execute("INSERT INTO " + s + ".instance_locks SELECT 'inst-' || g, 'lock_seed_' || g, "
                    + "9000000000000, 1 FROM generate_series(50000, 52000) g");
            st.execute("ANALYZE " + s + ".instances, " + s + ".executions, " + s + ".history, " + s
                    + ".orchestrator_queue, " + s + ".worker_queue, " + s + ".kv_store, " + s + ".kv_delta, " + s
                    + ".sessions, " + s + ".instance_locks");
            st.execute("LOAD 'auto_explain'");
            st.execute("SET auto_explain.log_min_duration = 0");
            st.execute("SET auto_explain.log_nested_statements = on");
            st.execute("SET auto_explain.log_level = notice");
        }
    }

    @AfterAll
    void writeAndDrop() throws SQLException, IOException {
        c.close();
        TestDatabase.dropSchema(schema);
        String doc;
        try (InputStream golden = QueryPlansTest.class.getResourceAsStream(GOLDEN)) {
            doc = new String(golden.readAllBytes(), StandardCharsets.UTF_8);
        }
        String marker = "<!-- generated by QueryPlansTest into target/query-plans.md -->";
        StringBuilder md = new StringBuilder(doc.substring(0, Math.max(0, doc.indexOf(marker))))
                .append(marker).append("\n\n");
        for (Map.Entry<String, String> e : plans.entrySet()) {
            md.append("### ").append(e.getKey()).append("\n\n```\n")
                    .append(e.getValue().strip().replace(Identifiers.quote(schema), "hub").replace(schema, "hub")).append("\n```\n\n");
        }
        Files.createDirectories(Path.of("target"));
        Files.writeString(Path.of("target/query-plans.md"), md.toString());
    }

    @Test
    void hot_path_and_per_instance_reads_use_indexes() throws SQLException {
        long now = 5_000;
        explain("fetch_orchestration_item", sql.fetchOrchestrationItem, now, now, 30_000L, "lock_plan_1", null, null);
        explain("fetch_orchestration_item (capability filter)", sql.fetchOrchestrationItem, now, now, 30_000L,
                "lock_plan_2", 1_000_000L, 1_999_999L);
        explain("ack_orchestration_item", sql.ackOrchestrationItem, "lock_plan_1", now, 1L,
                new Long[] {10L}, new String[] {"ExternalEvent"}, new String[] {"{\"event_id\":10}"},
                new String[] {"{\"ActivityExecute\":{}}"}, new String[] {"inst-11"}, new Long[] {1L},
                new Long[] {99L}, new String[] {null}, new String[] {null},
                new String[] {"inst-12"}, new String[] {"ExternalRaised"}, new String[] {"{\"ExternalRaised\":{}}"},
                new Long[] {now}, "Running", null, null, null, null, null, 1, "status",
                new String[] {"set"}, new String[] {"k"}, new String[] {"v"}, new Long[] {now},
                new String[] {"inst-11"}, new Long[] {1L}, new Long[] {3L});
        explain("abandon_orchestration_item", sql.abandonOrchestrationItem, "lock_plan_2", now, 0L, false);
        explain("enqueue_orchestrator_item", sql.enqueueOrchestratorItem, "inst-5", "ExternalRaised", "{}", now, now);
        explain("enqueue_worker_item", sql.enqueueWorkerItem, "{}", now, "inst-5", 1L, 7L, null, null);
        explain("fetch_work_item (untagged)", sql.fetchWorkItem, now, 30_000L, "lock_w_1", null, null, 0,
                new String[0]);
        explain("fetch_work_item (tags, session owner)", sql.fetchWorkItem, now, 30_000L, "lock_w_2", "owner",
                30_000L, 1, new String[] {"gpu"});
        explain("renew_work_item_lock", sql.renewWorkItemLock, "lock_w_1", now, 30_000L);
        explain("ack_work_item", sql.ackWorkItem, "lock_w_1", now, "inst-1", "ActivityCompleted", "{}");
        explain("abandon_work_item", sql.abandonWorkItem, "lock_w_2", now, 100L, true);
        // Batched claims write row-naming tokens ('@<id>:...'), found by primary key; the others are found through
        // the partial index on lock_token.
        explain("fetch_work_items (untagged, 3)", sql.fetchWorkItems, now, 30_000L, "lock_wb", null, null, 0,
                new String[0], 3, 1_000_000L, true);
        explain("fetch_work_item (untagged, a second lease)", sql.fetchWorkItem, now, 30_000L, "lock_w_3", null, null,
                0, new String[0]);
        List<String> rowTokens = rowNamingTokens();
        assertEquals(3, rowTokens.size(), "the batched claim wrote row-naming tokens: " + rowTokens);
        explain("renew_work_item_lock (row-naming token)", sql.renewWorkItemLock, rowTokens.get(0), now, 30_000L);
        explain("ack_work_item (row-naming token)", sql.ackWorkItem, rowTokens.get(0), now, "inst-3", "ActivityCompleted",
                "{}");
        explain("abandon_work_item (row-naming token)", sql.abandonWorkItem, rowTokens.get(1), now, 0L, true);
        explain("ack_work_items (row-naming, other and unknown tokens)", sql.ackWorkItems,
                new String[] {rowTokens.get(2), "lock_w_3", "@1:lock_unknown", "lock_unknown"},
                new Long[] {now, now, now, now}, new String[] {null, null, null, null},
                new String[] {null, null, null, null}, new String[] {null, null, null, null});
        explain("read_history", sql.readHistory, "inst-70", null);
        explain("get_custom_status", sql.getCustomStatus, "inst-70", 0L);
        explain("get_kv_values", sql.getKvValues, "inst-80", null);
        explain("get_instance_stats", sql.getInstanceStats, "inst-80");
        explain("list_executions", sql.listExecutions, "inst-70");
        explain("list_instances_after (a page of 500)", sql.listInstancesAfter, "inst-5", "", 500);
        explain("list_instances_after (prefix, 100)", sql.listInstancesAfter, "", "inst-9", 100);
        explain("get_instance_info", sql.getInstanceInfo, "inst-70");
        explain("get_execution_info", sql.getExecutionInfo, "inst-70", 2L);
        explain("list_children", sql.listChildren, "inst-20");
        explain("get_parent_id", sql.getParentId, "inst-21");
        explain("select_deletable_roots (limit 1000)", sql.selectDeletableRoots, null, null, 1000);
        explain("select_prunable_instances (ids)", sql.selectPrunableInstances, new String[] {"inst-30", "inst-60"},
                null, 1000);
        explain("prune_executions", sql.pruneExecutions, "inst-30", 1, null);
        explain("delete_instances_atomic", sql.deleteInstancesAtomic, new String[] {"inst-40", "inst-41"}, true);
        explain("claimable_now (long-poll fallback probe)", sql.claimableNow, now);
        explain("next_deadlines (long-poll timer scan)", sql.nextDeadlines, now, 1024);
        explain("get_queue_depths", sql.getQueueDepths, now);
        explain("get_system_metrics", sql.getSystemMetrics);

        List<String> violations = new ArrayList<>();
        for (Map.Entry<String, String> e : plans.entrySet()) {
            if (WHOLE_TABLE.stream().anyMatch(e.getKey()::startsWith)) {
                continue;
            }
            Matcher m = SEQ_SCAN.matcher(e.getValue());
            while (m.find()) {
                violations.add(e.getKey() + ": Seq Scan on " + m.group(1));
            }
        }
        assertTrue(violations.isEmpty(), "statements scanning a table of a 100k-instance hub: " + violations);

        // A token finds its row by one probe (primary key or the token index), never by reading the lease-end
        // index, which holds every live lease (the planner took it once a token comparison implied a lease).
        List<String> leaseWalks = new ArrayList<>();
        for (Map.Entry<String, String> e : plans.entrySet()) {
            if (TOKEN_TAKING.stream().anyMatch(e.getKey()::startsWith)
                    && e.getValue().contains("worker_queue_leased_until_idx")) {
                leaseWalks.add(e.getKey());
            }
        }
        assertTrue(leaseWalks.isEmpty(), "token lookups reading the lease-end index: " + leaseWalks + "\n"
                + leaseWalks.stream().map(plans::get).toList());
    }

    private List<String> rowNamingTokens() throws SQLException {
        List<String> tokens = new ArrayList<>();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT lock_token FROM "
                + Identifiers.quote(schema) + ".worker_queue WHERE lock_token LIKE '@%' ORDER BY id")) {
            while (rs.next()) {
                tokens.add(rs.getString(1));
            }
        }
        return tokens;
    }

    private void explain(String label, String statement, Object... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(statement)) {
            for (int i = 0; i < params.length; i++) {
                bind(ps, i + 1, params[i]);
            }
            ps.execute();
            try (ResultSet ignored = ps.getResultSet()) {
                // results are not the subject here
            }
            StringBuilder nested = new StringBuilder();
            for (SQLWarning w = ps.getWarnings(); w != null; w = w.getNextWarning()) {
                // Nested statements of plpgsql functions, or the inlined plan of a SQL function.
                nested.append(w.getMessage().replaceFirst("duration: [0-9.]+ ms\\s+", "")).append("\n");
            }
            plans.put(label, nested.toString());
        }
    }

    private void bind(PreparedStatement ps, int index, Object value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.OTHER);
        } else if (value instanceof Long l) {
            ps.setLong(index, l);
        } else if (value instanceof Integer n) {
            ps.setInt(index, n);
        } else if (value instanceof Boolean b) {
            ps.setBoolean(index, b);
        } else if (value instanceof String s) {
            ps.setString(index, s);
        } else if (value instanceof String[] a) {
            Array arr = c.createArrayOf("text", a);
            ps.setArray(index, arr);
        } else if (value instanceof Long[] a) {
            ps.setArray(index, c.createArrayOf("bigint", a));
        } else {
            throw new IllegalArgumentException("cannot bind " + value.getClass());
        }
    }
}
