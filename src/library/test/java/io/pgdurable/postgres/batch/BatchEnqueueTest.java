package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.BatchEnqueueException;
import io.pgdurable.spi.WorkItem;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Batched enqueue: chunking by count and bytes, order, and honest reporting when a chunk fails. */
class BatchEnqueueTest {
    private final List<String> schemas = new ArrayList<>();
    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (int i = resources.size() - 1; i >= 0; i--) {
            resources.get(i).close();
        }
        schemas.forEach(TestDatabase::dropSchema);
    }

    private String newSchema() {
        String schema = TestDatabase.newSchemaName("benq");
        schemas.add(schema);
        return schema;
    }

    private PostgresProvider provider(String schema, UnaryOperator<PostgresProviderConfig.Builder> tune) {
        PostgresProvider p = PostgresProvider.create(tune.apply(TestDatabase.config(schema)).build());
        resources.add(p);
        return p;
    }

    private PostgresProvider provider(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        return provider(newSchema(), tune);
    }

    private static WorkItem.ActivityExecute activity(long id, String input) {
        return new WorkItem.ActivityExecute("inst", 1, id, "A", input);
    }

    private static List<WorkItem> activities(int n) {
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            items.add(activity(i, "{}"));
        }
        return items;
    }

    private static List<Long> range(long from, long to) {
        List<Long> out = new ArrayList<>();
        for (long i = from; i < to; i++) {
            out.add(i);
        }
        return out;
    }

    private static List<Integer> indexes(int from, int to) {
        List<Integer> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(i);
        }
        return out;
    }

    /**
     * A provider on a schema where inserting the worker item with activity id 777 waits for an advisory lock that the
     * test holds ({@link #holdMarkerLock}) with a 200 ms lock timeout — a real lock timeout (SQLSTATE 55P03,
     * retryable), like any statement giving up under pressure. {@code everyTime} false: only the first attempt waits
     * (a sequence counts the attempts, and a sequence is not rolled back).
     */
    private PostgresProvider providerWithBlockedMarker(boolean everyTime, UnaryOperator<PostgresProviderConfig.Builder>
            tune) {
        String schema = newSchema();
        PostgresProvider p = provider(schema, tune);
        String s = q(schema);
        BatchDb.execute("CREATE SEQUENCE " + s + ".marker_attempts");
        BatchDb.execute("CREATE FUNCTION " + s + ".blocked_marker() RETURNS TRIGGER LANGUAGE plpgsql AS $$ "
                + "DECLARE v_attempt BIGINT; BEGIN "
                + "IF NEW.activity_id = 777 THEN "
                + "  v_attempt := nextval('" + s + ".marker_attempts'); "
                + "  IF v_attempt = 1 OR " + everyTime + " THEN "
                + "    PERFORM set_config('lock_timeout', '200ms', true); "
                + "    PERFORM pg_advisory_xact_lock(777, hashtext('" + schema + "')); "
                + "  END IF; "
                + "END IF; RETURN NEW; END $$");
        BatchDb.execute("CREATE TRIGGER blocked_marker BEFORE INSERT ON " + s + ".worker_queue "
                + "FOR EACH ROW EXECUTE FUNCTION " + s + ".blocked_marker()");
        return p;
    }

    /** Holds the lock the marker item's insert waits for, until closed. */
    private static Connection holdMarkerLock(String schema) throws SQLException {
        Connection c = TestDatabase.connect();
        try (Statement st = c.createStatement()) {
            st.execute("SELECT pg_advisory_lock(777, hashtext('" + schema + "'))");
        }
        return c;
    }

    /** 20 activities whose item #12 (activity id 777) is the slow one; ids are the indexes otherwise. */
    private static List<WorkItem> withMarkerAt12() {
        List<WorkItem> items = activities(20);
        items.set(12, activity(777, "{}"));
        return items;
    }

    @Test
    void chunks_by_count_keep_the_list_order() {
        PostgresProvider p = provider(b -> b.enqueueChunkItems(7));
        String schema = p.config().schema();
        p.enqueueAllForWorker(activities(50));
        assertEquals(range(0, 50), BatchDb.workerActivities(schema), "row order is list order");
        assertEquals(List.of(7L, 7L, 7L, 7L, 7L, 7L, 7L, 1L), BatchDb.rowsPerTransaction(schema, "worker_queue"),
                "one transaction per chunk of at most 7");
    }

    @Test
    void chunks_by_bytes_and_an_oversized_item_goes_alone() {
        int bound = 4096;
        PostgresProvider p = provider(b -> b.enqueueChunkBytes(bound));
        String schema = p.config().schema();
        int[] inputSizes = {900, 900, 900, 900, 900, 6000, 10, 2000, 2000, 10, 3000, 1200};
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < inputSizes.length; i++) {
            items.add(activity(i, "\"" + "é".repeat(inputSizes[i] / 2) + "\""));
        }
        // The expected chunks, by the documented rule: greedy, at least one item, at most `bound` bytes otherwise.
        List<Long> expected = new ArrayList<>();
        long chunkBytes = 0;
        long chunkItems = 0;
        for (WorkItem item : items) {
            int size = item.toJson().getBytes(StandardCharsets.UTF_8).length;
            if (chunkItems > 0 && chunkBytes + size > bound) {
                expected.add(chunkItems);
                chunkBytes = 0;
                chunkItems = 0;
            }
            chunkBytes += size;
            chunkItems++;
        }
        expected.add(chunkItems);
        assertTrue(expected.size() >= 5, "the test data spans several chunks: " + expected);
        p.enqueueAllForWorker(items);
        assertEquals(expected, BatchDb.rowsPerTransaction(schema, "worker_queue"));
        assertEquals(range(0, items.size()), BatchDb.workerActivities(schema));
        assertEquals(1, BatchDb.count(schema, "worker_queue WHERE octet_length(work_item) > " + bound),
                "the item above the bound was stored, alone in its chunk");
    }

    @Test
    void orchestrator_batches_keep_order_delay_and_timer_fire_times() {
        PostgresProvider p = provider(b -> b.enqueueChunkItems(2));
        String schema = p.config().schema();
        long fireAt = System.currentTimeMillis() + 3_600_000;
        long before = System.currentTimeMillis();
        p.enqueueAllForOrchestrator(List.of(new WorkItem.StartOrchestration("a", "O", "{}", "1.0.0"),
                new WorkItem.TimerFired("a", 1, 5, fireAt), new WorkItem.ExternalRaised("b", "e", "1")), null);
        long after = System.currentTimeMillis();
        assertEquals(List.of("StartOrchestration", "TimerFired", "ExternalRaised"),
                BatchDb.strings("SELECT kind FROM " + q(schema) + ".orchestrator_queue ORDER BY id"));
        List<Long> visible = BatchDb.longs("SELECT visible_at_ms FROM " + q(schema)
                + ".orchestrator_queue ORDER BY id");
        assertTrue(visible.get(0) >= before && visible.get(0) <= after, "visible now");
        assertEquals(fireAt, visible.get(1), "a timer is visible at its fire time");
        assertEquals(List.of(2L, 1L), BatchDb.rowsPerTransaction(schema, "orchestrator_queue"));

        p.enqueueAllForOrchestrator(List.of(new WorkItem.ExternalRaised("c", "late", "1")), Duration.ofMinutes(10));
        long delayed = BatchDb.longs("SELECT visible_at_ms FROM " + q(schema)
                + ".orchestrator_queue WHERE instance_id = 'c'").get(0);
        assertTrue(delayed >= before + 600_000, "the delay applies");
    }

    @Test
    void an_empty_batch_does_nothing() {
        PostgresProvider p = provider(b -> b);
        p.enqueueAllForWorker(List.of());
        p.enqueueAllForOrchestrator(List.of(), null);
        assertEquals(0, BatchDb.count(p.config().schema(), "worker_queue"));
        assertEquals(0, BatchDb.count(p.config().schema(), "orchestrator_queue"));
    }

    @Test
    void an_invalid_item_fails_the_whole_batch_before_anything_is_stored() {
        PostgresProvider p = provider(b -> b.maxPayloadBytes(1024).enqueueChunkItems(2));
        String schema = p.config().schema();
        List<WorkItem> items = activities(10);
        items.set(5, activity(5, "\"" + "z".repeat(2000) + "\""));
        BatchEnqueueException big = assertThrows(BatchEnqueueException.class, () -> p.enqueueAllForWorker(items));
        assertFalse(big.retryable());
        assertTrue(big.getMessage().contains("item #5") && big.getMessage().contains("maxPayloadBytes"),
                big.getMessage());
        assertEquals(List.of(), big.stored());
        assertEquals(List.of(), big.inDoubt());
        assertEquals(indexes(0, 10), big.notStored());
        assertEquals(0, BatchDb.count(schema, "worker_queue"), "nothing stored, as the exception says");

        List<WorkItem> wrongQueue = new ArrayList<>(activities(3));
        wrongQueue.add(new WorkItem.ExternalRaised("i", "e", "1"));
        BatchEnqueueException misrouted = assertThrows(BatchEnqueueException.class,
                () -> p.enqueueAllForWorker(wrongQueue));
        assertTrue(misrouted.getMessage().contains("item #3"), misrouted.getMessage());
        BatchEnqueueException activity = assertThrows(BatchEnqueueException.class,
                () -> p.enqueueAllForOrchestrator(activities(1), null));
        assertTrue(activity.getMessage().contains("worker queue"), activity.getMessage());
        BatchEnqueueException nullItem = assertThrows(BatchEnqueueException.class,
                () -> p.enqueueAllForWorker(Arrays.asList(activity(0, "{}"), null)));
        assertTrue(nullItem.getMessage().contains("item #1 is null"), nullItem.getMessage());
        assertThrows(BatchEnqueueException.class, () -> p.enqueueAllForWorker(null));
        assertThrows(BatchEnqueueException.class,
                () -> p.enqueueAllForOrchestrator(List.of(new WorkItem.ExternalRaised("i", "e", "1")),
                        Duration.ofMillis(-1)));
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
        assertEquals(0, BatchDb.count(schema, "orchestrator_queue"));
    }

    @Test
    void a_chunk_that_times_out_stops_the_batch_and_the_exception_says_exactly_what_is_stored() throws Exception {
        PostgresProvider p = providerWithBlockedMarker(true, b -> b.enqueueChunkItems(5));
        String schema = p.config().schema();
        BatchEnqueueException e;
        try (Connection holder = holdMarkerLock(schema)) {
            long start = System.nanoTime();
            e = assertThrows(BatchEnqueueException.class, () -> p.enqueueAllForWorker(withMarkerAt12()));
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "failed fast, no retry by default");
        }
        assertEquals(1, BatchDb.longs("SELECT last_value FROM " + q(schema) + ".marker_attempts").get(0),
                "one attempt");
        assertTrue(e.retryable(), e.getMessage());
        assertEquals("55P03", e.sqlState().orElse(null), e.getMessage());
        assertEquals(indexes(0, 10), e.stored());
        assertEquals(List.of(), e.inDoubt());
        assertEquals(indexes(10, 20), e.notStored());
        assertEquals(10, e.storedCount());
        assertTrue(e.getMessage().contains("chunk 3 of 4") && e.getMessage().contains("#10..#14"), e.getMessage());
        assertEquals(range(0, 10), BatchDb.workerActivities(schema), "stored = the first two chunks, nothing else");
    }

    @Test
    void a_retry_budget_rides_out_a_transient_failure_without_duplicates() throws Exception {
        PostgresProvider p = providerWithBlockedMarker(false, b -> b.enqueueChunkItems(5)
                .enqueueRetryBudget(Duration.ofSeconds(20)));
        String schema = p.config().schema();
        try (Connection holder = holdMarkerLock(schema)) {
            p.enqueueAllForWorker(withMarkerAt12());
        }
        List<Long> expected = range(0, 20);
        expected.set(12, 777L);
        assertEquals(expected, BatchDb.workerActivities(schema), "every item once, in order");
        assertEquals(List.of(5L, 5L, 5L, 5L), BatchDb.rowsPerTransaction(schema, "worker_queue"));
        assertTrue(BatchDb.longs("SELECT last_value FROM " + q(schema) + ".marker_attempts").get(0) >= 2,
                "the failed chunk was tried again");
    }

    @Test
    void the_retry_budget_bounds_the_wait() throws Exception {
        PostgresProvider p = providerWithBlockedMarker(true, b -> b.enqueueChunkItems(5)
                .enqueueRetryBudget(Duration.ofSeconds(1)));
        String schema = p.config().schema();
        BatchEnqueueException e;
        long elapsedMs;
        try (Connection holder = holdMarkerLock(schema)) {
            long start = System.nanoTime();
            e = assertThrows(BatchEnqueueException.class, () -> p.enqueueAllForWorker(withMarkerAt12()));
            elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        }
        assertTrue(elapsedMs >= 1_000 - 1_000 / 4, "kept retrying for about the budget: " + elapsedMs + " ms");
        assertTrue(elapsedMs < 5_000, "gave up within the budget plus one attempt: " + elapsedMs + " ms");
        assertTrue(BatchDb.longs("SELECT last_value FROM " + q(schema) + ".marker_attempts").get(0) >= 2,
                "retried within the budget");
        assertTrue(e.retryable());
        assertEquals(indexes(0, 10), e.stored());
        assertEquals(range(0, 10), BatchDb.workerActivities(schema));
    }

    @Test
    void an_exhausted_pool_fails_fast_with_nothing_stored() throws Exception {
        String schema = newSchema();
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(TestDatabase.url());
        hc.setMaximumPoolSize(2);
        hc.setConnectionTimeout(250);
        HikariDataSource ds = new HikariDataSource(hc);
        resources.add(ds);
        PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema).jdbcUrl(null).dataSource(ds)
                .build());
        resources.add(p);
        try (Connection held1 = ds.getConnection(); Connection held2 = ds.getConnection()) {
            long start = System.nanoTime();
            BatchEnqueueException e = assertThrows(BatchEnqueueException.class,
                    () -> p.enqueueAllForWorker(activities(30)));
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "failed fast");
            assertTrue(e.retryable(), e.getMessage());
            assertEquals(List.of(), e.stored());
            assertEquals(List.of(), e.inDoubt());
            assertEquals(indexes(0, 30), e.notStored());
        }
        assertEquals(0, BatchDb.count(schema, "worker_queue"), "nothing stored, as the exception says");
        p.enqueueAllForWorker(activities(30));
        assertEquals(range(0, 30), BatchDb.workerActivities(schema), "and the same batch succeeds later");
    }
}
