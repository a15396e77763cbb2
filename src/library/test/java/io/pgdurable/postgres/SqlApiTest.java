package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The SQL API (docs/sql-api.md), called by plain JDBC the way a writer that is not a provider calls
 * it, on a schema a provider migrated: what it stores is what a provider fetches and decodes, and every bad input is
 * refused with PD002, naming the argument, before anything is stored.
 */
class SqlApiTest {
    private static final Duration LOCK = Duration.ofSeconds(30);
    /** Characters a hand-built JSON string would get wrong: quotes, backslashes, controls, non-BMP, JSON itself. */
    private static final String TRICKY = "{\"a\": \"b\\\"c\"}\n\t\\ \u0001 é 😀 '' \\u0041 </script>";

    private String schema;
    private String q;
    private PostgresProvider provider;

    @BeforeEach
    void start() {
        schema = TestDatabase.newSchemaName("sqlapi");
        q = Identifiers.quote(schema);
        provider = PostgresProvider.create(TestDatabase.config(schema).build());
    }

    @AfterEach
    void stop() {
        provider.close();
        TestDatabase.dropSchema(schema);
    }

    // ------------------------------------------------------------------------------------------ helpers

    /** {@code SELECT schema.<function>(?, ?, ...)} with the arguments bound (null binds an untyped NULL). */
    private void call(String function, Object... args) throws SQLException {
        try (Connection c = TestDatabase.connect()) {
            call(c, function, args);
        }
    }

    private void call(Connection c, String function, Object... args) throws SQLException {
        StringBuilder sql = new StringBuilder("SELECT ").append(q).append('.').append(function).append('(');
        for (int i = 0; i < args.length; i++) {
            sql.append(i == 0 ? "?" : ", ?");
        }
        try (PreparedStatement ps = c.prepareStatement(sql.append(')').toString())) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            ps.execute();
        }
    }

    private void sql(String statement) throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute(statement);
        }
    }

    private List<List<Object>> rows(String query) throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(query)) {
            List<List<Object>> rows = new ArrayList<>();
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= n; i++) {
                    row.add(rs.getObject(i));
                }
                rows.add(row);
            }
            return rows;
        }
    }

    private long[] queueCounts() throws SQLException {
        List<Object> r = rows("SELECT (SELECT count(*) FROM " + q + ".orchestrator_queue), "
                + "(SELECT count(*) FROM " + q + ".worker_queue)").get(0);
        return new long[] {(Long) r.get(0), (Long) r.get(1)};
    }

    private FetchedOrchestration fetchTurn() {
        return provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
    }

    private List<WorkItem> storedOrchestratorItems() throws SQLException {
        List<WorkItem> items = new ArrayList<>();
        for (List<Object> r : rows("SELECT work_item, kind, instance_id FROM " + q + ".orchestrator_queue ORDER BY id")) {
            WorkItem item = WorkItem.fromJson((String) r.get(0));
            assertEquals(item.kind(), r.get(1), "the kind column holds the variant name");
            assertEquals(item.instance(), r.get(2), "the instance column holds the receiving instance");
            items.add(item);
        }
        return items;
    }

    /** Asserts the call is refused with PD002 and a message naming {@code fragment}, and that nothing is stored. */
    private Executable refused(String function, String fragment, Object... args) {
        return () -> {
            long[] before = queueCounts();
            SQLException e = assertThrows(SQLException.class, () -> call(function, args),
                    function + " must refuse " + fragment);
            assertEquals("PD002", e.getSQLState(), e.getMessage());
            String message = e.getMessage();
            assertTrue(message.contains(function + ": "), "the message names the function: " + message);
            assertTrue(message.contains(fragment), "the message should contain '" + fragment + "': " + message);
            assertArrayEquals(before, queueCounts(), "nothing stored after: " + message);
        };
    }

    // ------------------------------------------------------------------------------------------ the contract

    @Test
    void the_five_functions_have_the_documented_signatures_and_return_void() throws SQLException {
        Map<String, String> expected = Map.of(
                "start_orchestration", "p_instance_id text, p_orchestration text, p_input text, "
                        + "p_version text DEFAULT NULL::text, p_start_at timestamp with time zone DEFAULT NULL::timestamp with time zone",
                "raise_event", "p_instance_id text, p_event_name text, p_data text",
                "cancel_instance", "p_instance_id text, p_reason text DEFAULT 'cancelled through the SQL API'::text",
                "enqueue_activity", "p_instance_id text, p_execution_id bigint, p_activity_id bigint, p_name text, "
                        + "p_input text, p_session_id text DEFAULT NULL::text, p_tag text DEFAULT NULL::text",
                "enqueue_work_item", "p_work_item text, p_visible_at timestamp with time zone DEFAULT NULL::timestamp with time zone");
        for (Map.Entry<String, String> f : expected.entrySet()) {
            List<List<Object>> r = rows("SELECT pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), "
                    + "p.prosecdef FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                    + "WHERE n.nspname = '" + schema + "' AND p.proname = '" + f.getKey() + "'");
            assertEquals(1, r.size(), f.getKey() + ": exactly one function of the name (no overloads)");
            // The compatibility promise: later versions may only append arguments with defaults.
            assertTrue(((String) r.get(0).get(0)).startsWith(f.getValue()), f.getKey() + ": " + r.get(0).get(0));
            assertEquals("void", r.get(0).get(1), f.getKey());
            assertEquals(true, r.get(0).get(2), f.getKey() + " runs as its owner");
        }
        assertEquals(List.of(List.of("4194304")), rows("SELECT value FROM " + q
                + ".hub_settings WHERE name = 'sql_api_max_payload_bytes'"), "the provider's default payload limit");
    }

    // ------------------------------------------------------------------------------------------ each function

    @Test
    void start_orchestration_stores_what_a_provider_fetches_as_the_same_start() throws SQLException {
        call("start_orchestration", "o1", "ProcessOrder", TRICKY, "2.1.0");
        call("start_orchestration", "o2", "ProcessOrder", "");

        FetchedOrchestration first = fetchTurn();
        assertEquals("o1", first.item().instance());
        assertEquals(List.of(new WorkItem.StartOrchestration("o1", "ProcessOrder", TRICKY, "2.1.0")),
                first.item().messages());
        FetchedOrchestration second = fetchTurn();
        assertEquals(List.of(new WorkItem.StartOrchestration("o2", "ProcessOrder", "", null)),
                second.item().messages(), "no version: absent, and an empty input is a valid payload");
        // visible at once, created now, by the database clock
        for (List<Object> r : rows("SELECT visible_at_ms, created_at_ms FROM " + q + ".orchestrator_queue")) {
            assertEquals(r.get(1), r.get(0));
            assertTrue(Math.abs((Long) r.get(1) - System.currentTimeMillis()) < 60_000, r.toString());
        }
    }

    @Test
    void raise_event_and_cancel_instance_reach_the_instance_in_order() throws SQLException {
        try (Connection c = TestDatabase.connect()) {
            c.setAutoCommit(false);
            call(c, "start_orchestration", "o1", "ProcessOrder", "{}");
            call(c, "raise_event", "o1", "Approved", TRICKY);
            call(c, "raise_event", "o1", "Empty", "");
            call(c, "cancel_instance", "o1");
            call(c, "cancel_instance", "o1", "operator: " + TRICKY);
            c.commit();
        }
        assertEquals(List.of(
                        new WorkItem.StartOrchestration("o1", "ProcessOrder", "{}", null),
                        new WorkItem.ExternalRaised("o1", "Approved", TRICKY),
                        new WorkItem.ExternalRaised("o1", "Empty", ""),
                        new WorkItem.CancelInstance("o1", "cancelled through the SQL API"),
                        new WorkItem.CancelInstance("o1", "operator: " + TRICKY)),
                fetchTurn().item().messages());
    }

    @Test
    void a_rolled_back_transaction_takes_its_items_with_it() throws SQLException {
        try (Connection c = TestDatabase.connect()) {
            c.setAutoCommit(false);
            call(c, "start_orchestration", "o1", "ProcessOrder", "{}");
            call(c, "enqueue_activity", "o1", 1L, 2L, "Charge", "{}");
            c.rollback();
        }
        assertArrayEquals(new long[] {0, 0}, queueCounts());
    }

    @Test
    void enqueue_activity_fills_the_routing_columns_as_the_provider_does_and_tag_and_session_route_it()
            throws SQLException {
        WorkItem.ActivityExecute plain = new WorkItem.ActivityExecute("o1", 1, 2, "Charge", TRICKY);
        WorkItem.ActivityExecute routed = new WorkItem.ActivityExecute("o1", 3, 4, "Render", "x", "s-1", "gpu");
        call("enqueue_activity", "o1", 1L, 2L, "Charge", TRICKY);
        call("enqueue_activity", "o1", 3L, 4L, "Render", "x", "s-1", "gpu");
        // The same item through the Java API, to compare the columns with.
        provider.enqueueForWorker(routed);
        List<List<Object>> cols = rows("SELECT instance_id, execution_id, activity_id, session_id, tag, "
                + "visible_at_ms = created_at_ms, lock_token IS NULL, attempt_count FROM " + q
                + ".worker_queue ORDER BY id");
        assertEquals(Arrays.asList("o1", 1L, 2L, null, null, true, true, 0), cols.get(0));
        assertEquals(Arrays.asList("o1", 3L, 4L, "s-1", "gpu", true, true, 0), cols.get(1));
        assertEquals(cols.get(2), cols.get(1), "the SQL API fills the routing columns as enqueueForWorker does");

        FetchedWorkItem a = provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
        assertEquals(plain, a.item());
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).isEmpty(),
                "the tagged item is not for untagged workers");
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.tags("gpu")).isEmpty(),
                "a session item needs a session owner");
        SessionFetchConfig session = new SessionFetchConfig("worker-1", LOCK);
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, session, TagFilter.tags("cpu")).isEmpty(),
                "another tag does not match");
        FetchedWorkItem b = provider.fetchWorkItem(LOCK, Duration.ZERO, session, TagFilter.tags("gpu")).orElseThrow();
        assertEquals(routed, b.item());
        assertEquals("worker-1", rows("SELECT worker_id FROM " + q + ".sessions WHERE session_id = 's-1'")
                .get(0).get(0), "the fetch took the session");
    }

    // ------------------------------------------------------------------------------------------ start time

    @Test
    void a_future_start_is_not_fetchable_before_its_time_and_is_after() throws Exception {
        // Real clocks: 300 ms ahead. A run where even the first fetch ends after the start time proves nothing about
        // "before", so it is tried again with another instance (bounded).
        for (int attempt = 1; ; attempt++) {
            String id = "later-" + attempt;
            try (Connection c = TestDatabase.connect();
                 PreparedStatement ps = c.prepareStatement("SELECT " + q + ".start_orchestration(?, 'P', '{}', NULL, "
                         + "clock_timestamp() + interval '300 milliseconds')")) {
                ps.setString(1, id);
                ps.execute();
            }
            long due = (Long) rows("SELECT visible_at_ms FROM " + q + ".orchestrator_queue WHERE instance_id = '"
                    + id + "'").get(0).get(0);
            boolean emptyBeforeDue = false;
            Optional<FetchedOrchestration> found = Optional.empty();
            long deadline = due + 10_000;
            while (found.isEmpty()) {
                long before = System.currentTimeMillis();
                assertTrue(before < deadline, "the start never became fetchable");
                found = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null);
                long after = System.currentTimeMillis();
                if (found.isPresent()) {
                    assertTrue(after >= due, "fetched " + (due - after) + " ms before its start time");
                } else {
                    assertTrue(before < due, "not fetchable " + (before - due) + " ms after its start time");
                    emptyBeforeDue |= after < due;
                    Thread.sleep(5);
                }
            }
            assertEquals(List.of(new WorkItem.StartOrchestration(id, "P", "{}", null)), found.get().item().messages());
            if (emptyBeforeDue) {
                return;
            }
            assertTrue(attempt < 5, "five runs in a row found no moment before the start time to test");
        }
    }

    @Test
    void the_start_time_is_exact_to_the_millisecond_and_a_past_one_means_now() throws SQLException {
        SettableClock clock = new SettableClock(System.currentTimeMillis());
        long due = clock.millis() + 3_600_000;
        call("start_orchestration", "at", "P", "{}", "1.0.0", OffsetDateTime.ofInstant(Instant.ofEpochMilli(due),
                ZoneOffset.UTC));
        call("start_orchestration", "past", "P", "{}", null, OffsetDateTime.now(ZoneOffset.UTC).minusHours(1));
        // The test moves the application clock on purpose; the skew check would refuse the start on a machine
        // slow enough that a second passed since the clock was set.
        try (PostgresProvider manual = PostgresProvider.create(TestDatabase.config(schema).clock(clock)
                .clockSkewCheck(false).build())) {
            clock.set(System.currentTimeMillis() + 1_000);
            // Locked past the moves of the clock below, so that the next fetches can only find "at".
            FetchedOrchestration past = manual.fetchOrchestrationItem(Duration.ofHours(2), Duration.ZERO, null)
                    .orElseThrow();
            assertEquals("past", past.item().instance(), "a start time in the past means now");
            clock.set(due - 1);
            assertTrue(manual.fetchOrchestrationItem(LOCK, Duration.ZERO, null).isEmpty(), "1 ms before its time");
            clock.set(due);
            assertEquals(List.of(new WorkItem.StartOrchestration("at", "P", "{}", "1.0.0")),
                    manual.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow().item().messages());
        }
        List<Object> pastRow = rows("SELECT visible_at_ms, created_at_ms FROM " + q
                + ".orchestrator_queue WHERE instance_id = 'past'").get(0);
        assertEquals(pastRow.get(1), pastRow.get(0));
    }

    // ------------------------------------------------------------------------------------------ generic form

    @Test
    void enqueue_work_item_takes_every_kind_as_the_provider_encodes_it() throws SQLException {
        List<WorkItem> toInstance = List.of(
                new WorkItem.StartOrchestration("w1", "Parent", TRICKY, "1.2.3", "grand", 7L, 2),
                new WorkItem.ContinueAsNew("w1", "Parent", "", "2.0.0",
                        List.of(new WorkItem.CarriedEvent("e1", TRICKY), new WorkItem.CarriedEvent("e2", "")),
                        ""),
                new WorkItem.ContinueAsNew("w1", "Parent", "in", null, List.of(), null),
                new WorkItem.ActivityCompleted("w1", 1, 2, TRICKY),
                new WorkItem.ActivityFailed("w1", 1, 3, "boom"),
                new WorkItem.TimerFired("w1", 1, 4, 1),
                new WorkItem.TimerFired("w1", 1, 5, 0),
                new WorkItem.ExternalRaised("w1", "Approved", ""),
                new WorkItem.QueueMessage("w1", "note", TRICKY),
                new WorkItem.SubOrchCompleted("w1", 1, 6, "done"),
                new WorkItem.SubOrchFailed("w1", 1, 7, TRICKY),
                new WorkItem.CancelInstance("w1", "stop"));
        for (WorkItem item : toInstance) {
            call("enqueue_work_item", item.toJson());
        }
        WorkItem.ActivityExecute activity = new WorkItem.ActivityExecute("w1", 1, 8, "Charge", TRICKY, "s", "t");
        call("enqueue_work_item", activity.toJson());

        assertEquals(toInstance, storedOrchestratorItems());
        FetchedOrchestration turn = fetchTurn();
        assertEquals(toInstance, turn.item().messages(), "a provider fetches them all, decoded as given");
        assertEquals(activity, provider.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("o", LOCK),
                TagFilter.tags("t")).orElseThrow().item());
        assertEquals(List.of(Arrays.asList("w1", 1L, 8L, "s", "t")), rows("SELECT instance_id, execution_id, "
                + "activity_id, session_id, tag FROM " + q + ".worker_queue"));
    }

    @Test
    void enqueue_work_item_reads_json_as_the_decoder_does_and_stores_it_in_the_wire_form() throws SQLException {
        // Spacing, escapes, an unknown field, duplicate keys (the last counts), null for an absent optional field.
        call("enqueue_work_item", " {\n \"ExternalRaised\" : {\"instance\":\"w\\u0031\", \"name\": \"n\", "
                + "\"name\": \"\\u00e9v\\ud83d\\ude00\", \"data\": \"\\\"x\\\"\\/\", \"extra\": [1, {\"deep\": null}]}}\t");
        call("enqueue_work_item", "{\"StartOrchestration\": {\"instance\": \"w2\", \"orchestration\": \"O\", "
                + "\"input\": \"\", \"version\": null, \"execution_id\": null, \"parent_id\": null}}");
        call("enqueue_work_item", "{\"ActivityExecute\": {\"instance\": \"w1\", \"execution_id\": 9223372036854775807, "
                + "\"id\": 1, \"name\": \"A\", \"input\": \"i\", \"session_id\": null, \"tag\": null}}");
        assertEquals(List.of(new WorkItem.ExternalRaised("w1", "év😀", "\"x\"/"),
                        new WorkItem.StartOrchestration("w2", "O", "", null)),
                storedOrchestratorItems());
        String stored = (String) rows("SELECT work_item FROM " + q + ".orchestrator_queue ORDER BY id").get(0).get(0);
        assertFalse(stored.contains("extra"), "fields the decoder ignores are not stored: " + stored);
        assertEquals(new WorkItem.ActivityExecute("w1", Long.MAX_VALUE, 1, "A", "i"),
                WorkItem.fromJson((String) rows("SELECT work_item FROM " + q + ".worker_queue").get(0).get(0)));
        assertEquals(List.of(Arrays.asList(Long.MAX_VALUE, null, null)),
                rows("SELECT execution_id, session_id, tag FROM " + q + ".worker_queue"));
    }

    @Test
    void enqueue_work_item_delays_orchestrator_messages_and_never_shows_a_timer_before_its_fire_time()
            throws SQLException {
        long now = System.currentTimeMillis();
        OffsetDateTime inAnHour = OffsetDateTime.ofInstant(Instant.ofEpochMilli(now + 3_600_000), ZoneOffset.UTC);
        long fireAt = now + 7_200_000;
        call("enqueue_work_item", new WorkItem.ExternalRaised("w", "e", "d").toJson(), inAnHour);
        call("enqueue_work_item", new WorkItem.TimerFired("w", 1, 2, fireAt).toJson());
        call("enqueue_work_item", new WorkItem.TimerFired("w", 1, 3, fireAt).toJson(), inAnHour);
        call("enqueue_work_item", new WorkItem.TimerFired("w", 1, 4, now - 5_000).toJson(), inAnHour);
        call("enqueue_work_item", new WorkItem.CancelInstance("w", "r").toJson(),
                OffsetDateTime.now(ZoneOffset.UTC).minusDays(1));
        List<List<Object>> r = rows("SELECT visible_at_ms, created_at_ms FROM " + q + ".orchestrator_queue ORDER BY id");
        assertEquals(now + 3_600_000, r.get(0).get(0), "p_visible_at");
        assertEquals(fireAt, r.get(1).get(0), "a timer is visible at its fire time");
        assertEquals(fireAt, r.get(2).get(0), "the later of fire time and p_visible_at");
        assertEquals(now + 3_600_000, r.get(3).get(0), "the later of fire time and p_visible_at");
        assertEquals(r.get(4).get(1), r.get(4).get(0), "a past p_visible_at means now");
    }

    // ------------------------------------------------------------------------------------------ refusals

    @Test
    void bad_arguments_of_the_convenience_functions_are_refused_and_store_nothing() {
        OffsetDateTime soon = OffsetDateTime.now(ZoneOffset.UTC).plusMinutes(1);
        assertAll(
                refused("start_orchestration", "p_instance_id must not be NULL or empty", null, "O", "{}"),
                refused("start_orchestration", "p_instance_id must not be NULL or empty", "", "O", "{}"),
                refused("start_orchestration", "p_orchestration must not be NULL or empty", "i", null, "{}"),
                refused("start_orchestration", "p_orchestration must not be NULL or empty", "i", "", "{}"),
                refused("start_orchestration", "p_input must not be NULL", "i", "O", null),
                refused("start_orchestration", "p_version must be NULL (absent) or non-empty", "i", "O", "{}", ""),
                refused("start_orchestration", "p_instance_id must not be NULL or empty", null, "O", "{}", "1", soon),
                refused("start_orchestration", "p_start_at must be a finite time", "i", "O", "{}", null,
                        OffsetDateTime.MAX),
                refused("raise_event", "p_instance_id must not be NULL or empty", null, "e", "d"),
                refused("raise_event", "p_instance_id must not be NULL or empty", "", "e", "d"),
                refused("raise_event", "p_event_name must not be NULL or empty", "i", null, "d"),
                refused("raise_event", "p_event_name must not be NULL or empty", "i", "", "d"),
                refused("raise_event", "p_data must not be NULL", "i", "e", null),
                refused("cancel_instance", "p_instance_id must not be NULL or empty", (Object) null),
                refused("cancel_instance", "p_instance_id must not be NULL or empty", "", "why"),
                refused("cancel_instance", "p_reason must not be NULL", "i", null),
                refused("enqueue_activity", "p_instance_id must not be NULL or empty", null, 1L, 1L, "A", "{}"),
                refused("enqueue_activity", "p_instance_id must not be NULL or empty", "", 1L, 1L, "A", "{}"),
                refused("enqueue_activity", "p_execution_id must not be NULL", "i", null, 1L, "A", "{}"),
                refused("enqueue_activity", "p_execution_id must be at least 1 (ids start at 1), is -1",
                        "i", -1L, 1L, "A", "{}"),
                refused("enqueue_activity", "p_execution_id must be at least 1 (ids start at 1), is 0",
                        "i", 0L, 1L, "A", "{}"),
                refused("enqueue_activity", "p_activity_id must not be NULL", "i", 1L, null, "A", "{}"),
                refused("enqueue_activity", "p_activity_id must be at least 1 (ids start at 1), is "
                        + Long.MIN_VALUE, "i", 1L, Long.MIN_VALUE, "A", "{}"),
                refused("enqueue_activity", "p_name must not be NULL or empty", "i", 1L, 1L, null, "{}"),
                refused("enqueue_activity", "p_name must not be NULL or empty", "i", 1L, 1L, "", "{}"),
                refused("enqueue_activity", "p_input must not be NULL", "i", 1L, 1L, "A", null),
                refused("enqueue_activity", "p_session_id must be NULL (absent) or non-empty",
                        "i", 1L, 1L, "A", "{}", "", null),
                refused("enqueue_activity", "p_tag must be NULL (absent) or non-empty",
                        "i", 1L, 1L, "A", "{}", null, ""));
    }

    @Test
    void malformed_or_unknown_work_items_are_refused_and_store_nothing() {
        OffsetDateTime soon = OffsetDateTime.now(ZoneOffset.UTC).plusMinutes(1);
        String fn = "enqueue_work_item";
        assertAll(
                refused(fn, "p_work_item must not be NULL", (Object) null),
                refused(fn, "p_work_item is not valid JSON", ""),
                refused(fn, "p_work_item is not valid JSON", "{\"CancelInstance\": {\"instance\": \"i\""),
                refused(fn, "p_work_item is not valid JSON", "{'CancelInstance': {}}"),
                refused(fn, "p_work_item is not valid JSON", "{\"CancelInstance\": {\"instance\": \"i\", "
                        + "\"reason\": \"\\u0000\"}}"),
                refused(fn, "p_work_item is not valid JSON", "{\"CancelInstance\": {\"instance\": \"\\ud800\", "
                        + "\"reason\": \"r\"}}"),
                refused(fn, "p_work_item nests too deeply", "{\"x\": " + "[".repeat(200_000) + "]".repeat(200_000)
                        + "}"),
                refused(fn, "p_work_item must be a JSON object", "[{\"CancelInstance\": {}}]"),
                refused(fn, "p_work_item must be a JSON object", "\"CancelInstance\""),
                refused(fn, "p_work_item must have exactly one key, the kind of work item, got none", "{}"),
                refused(fn, "got 2: CancelInstance, ExternalRaised",
                        "{\"CancelInstance\": {\"instance\": \"i\", \"reason\": \"r\"}, "
                                + "\"ExternalRaised\": {\"instance\": \"i\", \"name\": \"n\", \"data\": \"d\"}}"),
                refused(fn, "p_work_item has unknown kind \"Cancel\"", "{\"Cancel\": {\"instance\": \"i\"}}"),
                refused(fn, "p_work_item has unknown kind \"cancelinstance\"", "{\"cancelinstance\": {}}"),
                refused(fn, "p_work_item kind CancelInstance must hold an object of fields, got a JSON string",
                        "{\"CancelInstance\": \"i\"}"),
                refused(fn, "CancelInstance.instance must be a non-empty string, got nothing (the field is missing)",
                        "{\"CancelInstance\": {\"reason\": \"r\"}}"),
                refused(fn, "CancelInstance.instance must not be empty",
                        "{\"CancelInstance\": {\"instance\": \"\", \"reason\": \"r\"}}"),
                refused(fn, "CancelInstance.instance must be a non-empty string, got a JSON number",
                        "{\"CancelInstance\": {\"instance\": 5, \"reason\": \"r\"}}"),
                refused(fn, "CancelInstance.reason must be a string, got a JSON null",
                        "{\"CancelInstance\": {\"instance\": \"i\", \"reason\": null}}"),
                refused(fn, "CancelInstance.reason must be a string, got a JSON object",
                        "{\"CancelInstance\": {\"instance\": \"i\", \"reason\": {}}}"),
                refused(fn, "ExternalRaised.name must not be empty",
                        "{\"ExternalRaised\": {\"instance\": \"i\", \"name\": \"\", \"data\": \"d\"}}"),
                refused(fn, "ExternalRaised.data must be a string, got nothing",
                        "{\"ExternalRaised\": {\"instance\": \"i\", \"name\": \"n\"}}"),
                refused(fn, "QueueMessage.data must be a string, got a JSON number",
                        "{\"QueueMessage\": {\"instance\": \"i\", \"name\": \"n\", \"data\": 1}}"),
                refused(fn, "StartOrchestration.orchestration must be a non-empty string",
                        "{\"StartOrchestration\": {\"instance\": \"i\", \"input\": \"\"}}"),
                refused(fn, "StartOrchestration.version must be a non-empty string or absent, got a JSON number",
                        "{\"StartOrchestration\": {\"instance\": \"i\", \"orchestration\": \"O\", \"input\": \"\", "
                                + "\"version\": 1}}"),
                refused(fn, "StartOrchestration.version must not be empty",
                        "{\"StartOrchestration\": {\"instance\": \"i\", \"orchestration\": \"O\", \"input\": \"\", "
                                + "\"version\": \"\"}}"),
                refused(fn, "StartOrchestration.execution_id must be an integer", start("\"execution_id\": \"1\"")),
                refused(fn, "StartOrchestration.execution_id must be at least 1, is 0", start("\"execution_id\": 0")),
                refused(fn, "StartOrchestration.parent_id must be an integer (no fraction or exponent, within BIGINT)"
                        + " or absent, got 1.0", start("\"parent_id\": 1.0")),
                refused(fn, "StartOrchestration.parent_id must be an integer", start("\"parent_id\": 1e3")),
                refused(fn, "StartOrchestration.parent_id must be an integer", start("\"parent_id\": true")),
                refused(fn, "StartOrchestration.parent_instance must not be empty", start("\"parent_instance\": \"\"")),
                refused(fn, "ActivityExecute.execution_id must be an integer (no fraction or exponent, within BIGINT),"
                        + " got 9223372036854775808", activity("\"execution_id\": 9223372036854775808, \"id\": 1")),
                refused(fn, "ActivityExecute.id must be at least 1, is -1", activity("\"execution_id\": 1, \"id\": -1")),
                refused(fn, "ActivityExecute.id must be an integer", activity("\"execution_id\": 1")),
                refused(fn, "ActivityExecute.tag must not be empty",
                        activity("\"execution_id\": 1, \"id\": 1, \"tag\": \"\"")),
                refused(fn, "ActivityExecute.session_id must be a non-empty string or absent, got a JSON array",
                        activity("\"execution_id\": 1, \"id\": 1, \"session_id\": []")),
                refused(fn, "p_visible_at must be NULL for an ActivityExecute",
                        new WorkItem.ActivityExecute("i", 1, 1, "A", "").toJson(), soon),
                refused(fn, "p_visible_at must be a finite time",
                        new WorkItem.CancelInstance("i", "r").toJson(), OffsetDateTime.MIN),
                refused(fn, "TimerFired.fire_at_ms must be at least 0, is -1",
                        "{\"TimerFired\": {\"instance\": \"i\", \"execution_id\": 1, \"id\": 1, \"fire_at_ms\": -1}}"),
                refused(fn, "TimerFired.fire_at_ms must be an integer",
                        "{\"TimerFired\": {\"instance\": \"i\", \"execution_id\": 1, \"id\": 1}}"),
                refused(fn, "SubOrchCompleted.parent_instance must be a non-empty string",
                        "{\"SubOrchCompleted\": {\"instance\": \"i\", \"parent_execution_id\": 1, \"parent_id\": 1, "
                                + "\"result\": \"r\"}}"),
                refused(fn, "SubOrchFailed.parent_execution_id must be at least 1, is 0",
                        "{\"SubOrchFailed\": {\"parent_instance\": \"i\", \"parent_execution_id\": 0, "
                                + "\"parent_id\": 1, \"details\": \"r\"}}"),
                refused(fn, "ContinueAsNew.carry_forward_events must be a list of [name, data] string pairs, "
                        + "got a JSON object", carried("{}")),
                refused(fn, "got an element [\"a\"]", carried("[[\"a\"]]")),
                refused(fn, "got an element [\"a\", 1]", carried("[[\"a\", 1]]")),
                refused(fn, "got an element \"a\"", carried("[\"a\"]")),
                refused(fn, "with non-empty names", carried("[[\"\", \"d\"]]")));
    }

    private static String start(String field) {
        return "{\"StartOrchestration\": {\"instance\": \"i\", \"orchestration\": \"O\", \"input\": \"\", "
                + field + "}}";
    }

    private static String activity(String fields) {
        return "{\"ActivityExecute\": {\"instance\": \"i\", \"name\": \"A\", \"input\": \"\", " + fields + "}}";
    }

    private static String carried(String list) {
        return "{\"ContinueAsNew\": {\"instance\": \"i\", \"orchestration\": \"O\", \"input\": \"\", "
                + "\"carry_forward_events\": " + list + "}}";
    }

    @Test
    void payloads_and_work_items_above_the_hub_limit_are_refused_by_their_utf8_size() throws SQLException {
        sql("UPDATE " + q + ".hub_settings SET value = '100' WHERE name = 'sql_api_max_payload_bytes'");
        String fits = "x".repeat(100);
        String over = "x".repeat(101);
        String overInUtf8 = "é".repeat(51); // 51 characters, 102 bytes
        String fn = "enqueue_work_item";
        String overItem = "{\"CancelInstance\": {\"instance\": \"i\", \"reason\": \"" + "x".repeat(60) + "\"}}";
        assertAll(
                refused("start_orchestration", "p_input is 101 bytes, above the limit of 100 bytes "
                        + "(hub_settings row sql_api_max_payload_bytes)", "i", "O", over),
                refused("start_orchestration", "p_input is 102 bytes", "i", "O", overInUtf8),
                refused("start_orchestration", "the resulting work item is ", "i", "O", fits),
                refused("raise_event", "p_data is 101 bytes", "i", "e", over),
                refused("raise_event", "the resulting work item is ", "i", "e", "x".repeat(60)),
                refused("cancel_instance", "p_reason is 102 bytes", "i", overInUtf8),
                refused("enqueue_activity", "p_input is 101 bytes", "i", 1L, 1L, "A", over),
                refused("enqueue_activity", "the resulting work item is ", "i", 1L, 1L, "A", "x".repeat(50)),
                refused(fn, "p_work_item is 101 bytes", " ".repeat(101)),
                refused(fn, "p_work_item is " + overItem.length() + " bytes", overItem));
        // The stored form may be a little larger than a compact item given (it spaces the kind's colon): the stored
        // size counts, so a given item of exactly the limit is refused for what it would become.
        String prefix = "{\"CancelInstance\":{\"instance\":\"i\",\"reason\":\"";
        String exactlyTheLimit = prefix + "x".repeat(100 - prefix.length() - 3) + "\"}}";
        assertEquals(100, exactlyTheLimit.length());
        assertAll(refused(fn, "the resulting work item is 102 bytes", exactlyTheLimit));
        call("raise_event", "i", "e", "x".repeat(40));
        assertArrayEquals(new long[] {1, 0}, queueCounts(), "an item within the limit is stored");

        // A deleted setting means the provider's default, 4 MiB.
        sql("DELETE FROM " + q + ".hub_settings WHERE name = 'sql_api_max_payload_bytes'");
        call("raise_event", "i", "e", fits.repeat(1000));
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            SQLException e = assertThrows(SQLException.class, () -> st.execute("SELECT " + q
                    + ".raise_event('i', 'e', repeat('x', 4194305))"));
            assertEquals("PD002", e.getSQLState());
            assertTrue(e.getMessage().contains("p_data is 4194305 bytes, above the limit of 4194304 bytes"),
                    e.getMessage());
        }
        // A malformed setting is the hub's fault, not the caller's: another SQLSTATE, and nothing stored.
        sql("INSERT INTO " + q + ".hub_settings VALUES ('sql_api_max_payload_bytes', 'lots')");
        long[] before = queueCounts();
        SQLException e = assertThrows(SQLException.class, () -> call("raise_event", "i", "e", "d"));
        assertEquals("22023", e.getSQLState(), e.getMessage());
        assertTrue(e.getMessage().contains("sql_api_max_payload_bytes must be a positive integer"), e.getMessage());
        assertArrayEquals(before, queueCounts());
    }

    // ------------------------------------------------------------------------------------------ privileges

    @Test
    void a_writer_role_needs_only_usage_on_the_schema_and_execute_on_the_function() throws SQLException {
        String role = TestDatabase.newSchemaName("sqlapi_writer");
        sql("CREATE ROLE " + role + " NOLOGIN");
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute("GRANT USAGE ON SCHEMA " + q + " TO " + role);
            st.execute("SET ROLE " + role);
            SQLException denied = assertThrows(SQLException.class, () -> call(c, "raise_event", "i", "e", "d"));
            assertEquals("42501", denied.getSQLState(), "EXECUTE is not granted to PUBLIC: " + denied.getMessage());
            st.execute("RESET ROLE");
            st.execute("GRANT EXECUTE ON FUNCTION " + q + ".raise_event(TEXT, TEXT, TEXT) TO " + role);
            st.execute("SET ROLE " + role);
            call(c, "raise_event", "i", "e", "d");
            SQLException noTable = assertThrows(SQLException.class, () -> st.execute("INSERT INTO " + q
                    + ".orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms) "
                    + "VALUES ('i', 'k', '{}', 0, 0)"));
            assertEquals("42501", noTable.getSQLState(), "the role has no privilege on the table itself");
            st.execute("RESET ROLE");
        } finally {
            sql("DROP OWNED BY " + role);
            sql("DROP ROLE " + role);
        }
        assertEquals(List.of(new WorkItem.ExternalRaised("i", "e", "d")), storedOrchestratorItems());
    }

    /** An application clock a test sets. */
    private static final class SettableClock extends Clock {
        private final AtomicLong millis;

        SettableClock(long millis) {
            this.millis = new AtomicLong(millis);
        }

        void set(long value) {
            millis.set(value);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public long millis() {
            return millis.get();
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis.get());
        }
    }
}
