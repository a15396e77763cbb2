package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Batched worker fetch: count, wait and size bounds, FIFO, tag and session rules, concurrency. */
class BatchFetchTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private final Hubs hubs = new Hubs("bfetch");

    @AfterEach
    void stop() {
        hubs.close();
    }

    private PostgresProvider provider(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        return hubs.open(tune);
    }

    private PostgresProvider provider() {
        return provider(b -> b);
    }

    private static WorkItem.ActivityExecute activity(long id) {
        return BatchDb.activity(id); // named here too: the overload below would hide a static import
    }

    private static WorkItem.ActivityExecute activity(long id, String session, String tag, String input) {
        return new WorkItem.ActivityExecute("inst", 1, id, "A", input, session, tag);
    }

    private static void enqueue(PostgresProvider p, int from, int to) {
        for (int i = from; i < to; i++) {
            p.enqueueForWorker(activity(i));
        }
    }

    private static List<Long> ids(List<FetchedWorkItem> batch) {
        return batch.stream().map(f -> ((WorkItem.ActivityExecute) f.item()).id()).toList();
    }

    private static List<Long> range(long from, long to) {
        List<Long> out = new ArrayList<>();
        for (long i = from; i < to; i++) {
            out.add(i);
        }
        return out;
    }

    @Test
    void a_batch_holds_at_most_max_items_oldest_first_each_with_its_own_token() {
        PostgresProvider p = provider();
        enqueue(p, 0, 10);
        List<FetchedWorkItem> first = p.fetchWorkItems(LOCK, WorkBatch.upTo(4), null, TagFilter.any());
        assertEquals(range(0, 4), ids(first));
        assertEquals(4, first.stream().map(FetchedWorkItem::lockToken).distinct().count(), "one token per item");
        assertTrue(first.stream().allMatch(f -> f.attemptCount() == 1));
        assertEquals(range(4, 8), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(4), null, TagFilter.any())));
        assertEquals(range(8, 10), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(4), null, TagFilter.any())));
        assertEquals(List.of(), p.fetchWorkItems(LOCK, WorkBatch.upTo(4), null, TagFilter.any()));
    }

    @Test
    void each_token_of_a_batch_acks_renews_and_abandons_on_its_own() {
        PostgresProvider p = provider();
        enqueue(p, 0, 3);
        List<FetchedWorkItem> batch = p.fetchWorkItems(LOCK, WorkBatch.upTo(3), null, TagFilter.any());
        p.ackWorkItem(batch.get(0).lockToken(), new WorkItem.ActivityCompleted("inst", 1, 0, "\"r\""));
        p.abandonWorkItem(batch.get(1).lockToken(), null, false);
        p.renewWorkItemLock(batch.get(2).lockToken(), LOCK);
        FetchedWorkItem again = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        assertEquals(1L, ((WorkItem.ActivityExecute) again.item()).id(), "only the abandoned item is free again");
        assertEquals(2, again.attemptCount());
        String schema = p.config().schema();
        assertEquals(1, BatchDb.count(schema, "orchestrator_queue"), "the ack enqueued its completion");
        assertThrows(ProviderException.class, () -> p.ackWorkItem(batch.get(0).lockToken(), null),
                "a batch token is single-use like any other");
    }

    @Test
    void max_wait_zero_makes_one_attempt_and_returns_below_the_minimum() {
        PostgresProvider p = provider();
        enqueue(p, 0, 2);
        long start = System.nanoTime();
        List<FetchedWorkItem> got = p.fetchWorkItems(LOCK, new WorkBatch(10, 5, Duration.ZERO), null,
                TagFilter.any());
        assertEquals(range(0, 2), ids(got));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "did not wait");
        assertEquals(List.of(), p.fetchWorkItems(LOCK, new WorkBatch(10, 5, Duration.ZERO), null, TagFilter.any()));
    }

    @Test
    void short_poll_waits_out_max_wait_when_the_minimum_is_not_reached() {
        PostgresProvider p = provider();
        enqueue(p, 0, 2);
        long start = System.nanoTime();
        List<FetchedWorkItem> got = p.fetchWorkItems(LOCK, new WorkBatch(10, 5, Duration.ofMillis(300)), null,
                TagFilter.any());
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertEquals(range(0, 2), ids(got), "what it found, holding their leases");
        assertTrue(elapsedMs >= 300, "kept trying for maxWait, returned after " + elapsedMs + " ms");
        assertTrue(elapsedMs < 10_000, "but not much longer: " + elapsedMs + " ms");
    }

    @Test
    void short_poll_returns_as_soon_as_the_minimum_is_reached() throws Exception {
        PostgresProvider p = provider();
        enqueue(p, 0, 1);
        long start = System.nanoTime();
        CompletableFuture<List<FetchedWorkItem>> waiting = CompletableFuture.supplyAsync(() -> p.fetchWorkItems(
                LOCK, new WorkBatch(10, 3, Duration.ofSeconds(30)), null, TagFilter.any()));
        enqueue(p, 1, 3);
        List<FetchedWorkItem> got = waiting.get(20, TimeUnit.SECONDS);
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertEquals(range(0, 3), ids(got.stream().sorted((a, b) -> Long.compare(
                ((WorkItem.ActivityExecute) a.item()).id(), ((WorkItem.ActivityExecute) b.item()).id())).toList()));
        assertTrue(elapsedMs < 10_000, "returned at the minimum, not at maxWait (30 s): " + elapsedMs + " ms");
    }

    @Test
    void long_poll_parks_for_the_first_item_and_returns_at_the_minimum() throws Exception {
        PostgresProvider p = provider(b -> b.longPolling(true));
        long start = System.nanoTime();
        CompletableFuture<List<FetchedWorkItem>> waiting = CompletableFuture.supplyAsync(() -> p.fetchWorkItems(
                LOCK, new WorkBatch(10, 2, Duration.ofSeconds(30)), null, TagFilter.any()));
        BatchDb.awaitTrue("the batch fetch is parked", Duration.ofSeconds(10),
                () -> p.longPolling().orElseThrow().parkedFetches() > 0);
        p.enqueueAllForWorker(List.of(activity(0), activity(1)));
        List<FetchedWorkItem> got = waiting.get(20, TimeUnit.SECONDS);
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertEquals(range(0, 2), ids(got));
        assertTrue(elapsedMs < 10_000, "woken by the enqueue, not by maxWait (30 s): " + elapsedMs + " ms");
    }

    @Test
    void long_poll_returns_what_it_holds_when_max_wait_ends() {
        PostgresProvider p = provider(b -> b.longPolling(true));
        enqueue(p, 0, 1);
        long start = System.nanoTime();
        List<FetchedWorkItem> got = p.fetchWorkItems(LOCK, new WorkBatch(10, 5, Duration.ofMillis(300)), null,
                TagFilter.any());
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertEquals(range(0, 1), ids(got));
        assertTrue(elapsedMs >= 290, "parked for the rest of maxWait: " + elapsedMs + " ms");
        assertTrue(elapsedMs < 10_000, "then returned: " + elapsedMs + " ms");
        assertEquals(0, p.longPolling().orElseThrow().parkedFetches(), "no waiter left behind");
    }

    @Test
    void tag_filters_apply_to_every_item_of_the_batch() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(0, null, null, "{}"), activity(1, null, "gpu", "{}"),
                activity(2, null, "cpu", "{}"), activity(3, null, null, "{}"), activity(4, null, "gpu", "{}"),
                activity(5, null, "io", "{}")));
        assertEquals(List.of(), p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.none()));
        assertEquals(List.of(1L, 4L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.tags("gpu"))));
        assertEquals(List.of(0L, 3L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null,
                TagFilter.defaultOnly())));
        assertEquals(List.of(2L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null,
                TagFilter.defaultAnd("cpu"))));
        assertEquals(List.of(5L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any())));
    }

    @Test
    void session_items_need_a_session_config_and_stay_with_the_owner_that_claimed_them() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(0, "s1", null, "{}"), activity(1, null, null, "{}"),
                activity(2, "s1", null, "{}"), activity(3, "s2", null, "{}"), activity(4, "s1", null, "{}")));
        SessionFetchConfig a = new SessionFetchConfig("owner-a", LOCK);
        SessionFetchConfig b = new SessionFetchConfig("owner-b", LOCK);
        assertEquals(List.of(1L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any())),
                "without a session configuration, only items without a session");
        assertEquals(List.of(0L, 2L, 3L, 4L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), a, TagFilter.any())),
                "an owner takes the free sessions, oldest first");
        String schema = p.config().schema();
        assertEquals(List.of("owner-a", "owner-a"), BatchDb.strings("SELECT worker_id FROM " + q(schema)
                + ".sessions ORDER BY session_id"), "and holds both session leases");
        p.enqueueAllForWorker(List.of(activity(5, "s1", null, "{}"), activity(6, "s3", null, "{}")));
        assertEquals(List.of(6L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), b, TagFilter.any())),
                "another owner gets only the free session");
        assertEquals(List.of(5L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), a, TagFilter.any())),
                "the new item of s1 goes to its owner");
    }

    @Test
    void a_session_goes_out_oldest_first_across_batches() {
        PostgresProvider p = provider();
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            items.add(activity(i, "s", null, "{}"));
        }
        p.enqueueAllForWorker(items);
        SessionFetchConfig a = new SessionFetchConfig("owner-a", LOCK);
        List<FetchedWorkItem> first = p.fetchWorkItems(LOCK, WorkBatch.upTo(2), a, TagFilter.any());
        assertEquals(List.of(0L, 1L), ids(first));
        p.abandonWorkItem(first.get(1).lockToken(), null, false);
        assertEquals(List.of(1L, 2L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(2), a, TagFilter.any())),
                "the released item goes out again before the newer ones");
        assertEquals(List.of(3L, 4L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(5), a, TagFilter.any())));
    }

    @Test
    void a_session_whose_oldest_item_another_fetcher_is_taking_is_left_out_of_the_batch() throws Exception {
        PostgresProvider p = provider();
        String schema = p.config().schema();
        p.enqueueAllForWorker(List.of(activity(0, "s", null, "{}"), activity(1, "s", null, "{}"),
                activity(2, null, null, "{}"), activity(3, "s", null, "{}")));
        SessionFetchConfig a = new SessionFetchConfig("owner-a", LOCK);
        // Another fetcher has row-locked the session's oldest item and not committed yet.
        try (Connection other = TestDatabase.connect()) {
            other.setAutoCommit(false);
            try (Statement st = other.createStatement()) {
                st.execute("SELECT id FROM " + q(schema) + ".worker_queue WHERE activity_id = 0 FOR UPDATE");
            }
            assertEquals(List.of(2L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), a, TagFilter.any())),
                    "the newer items of the session must not overtake the older one");
            assertEquals(0, BatchDb.count(schema, "sessions"), "and the session was not taken");
            other.rollback();
        }
        assertEquals(List.of(0L, 1L, 3L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), a, TagFilter.any())));
    }

    @Test
    void a_session_another_fetcher_is_claiming_from_is_skipped_without_waiting() throws Exception {
        PostgresProvider p = provider();
        String schema = p.config().schema();
        p.enqueueAllForWorker(List.of(activity(0, "busy", null, "{}"), activity(1, "free", null, "{}"),
                activity(2, null, null, "{}")));
        SessionFetchConfig a = new SessionFetchConfig("owner-a", LOCK);
        try (Connection other = TestDatabase.connect()) {
            other.setAutoCommit(false);
            try (Statement st = other.createStatement()) {
                // The key fetch_work_item takes while it claims from session "busy".
                st.execute("SELECT pg_advisory_xact_lock(hashtext('" + q(schema) + ":session'), hashtext('busy'))");
            }
            long start = System.nanoTime();
            assertEquals(List.of(1L, 2L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), a, TagFilter.any())));
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "did not wait for the lock");
            other.rollback();
        }
        assertEquals(List.of(0L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), a, TagFilter.any())));
    }

    @Test
    void concurrent_batch_fetchers_never_share_an_item_and_sessions_keep_owner_and_order() throws Exception {
        PostgresProvider p = provider(b -> b.poolSize(8));
        PostgresProvider peer = hubs.open(p.config().schema(), b -> b.poolSize(4));
        int plain = 300;
        int sessions = 20;
        int perSession = 10;
        List<WorkItem> items = new ArrayList<>();
        Map<Long, String> sessionOf = new HashMap<>();
        long id = 0;
        for (int round = 0; round < perSession; round++) {
            for (int s = 0; s < sessions; s++) {
                sessionOf.put(id, "s" + s);
                items.add(activity(id++, "s" + s, null, "{}"));
            }
            for (int i = 0; i < plain / perSession; i++) {
                items.add(activity(id++, null, null, "{}"));
            }
        }
        p.enqueueAllForWorker(items);
        int total = items.size();
        AtomicInteger claimed = new AtomicInteger();
        int threads = 6;
        List<List<Long>> received = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            received.add(Collections.synchronizedList(new ArrayList<>()));
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (int t = 0; t < threads; t++) {
            int me = t;
            PostgresProvider node = t % 2 == 0 ? p : peer;
            SessionFetchConfig owner = new SessionFetchConfig("owner-" + t, LOCK);
            done.add(pool.submit(() -> {
                go.await();
                while (claimed.get() < total && System.nanoTime() < deadline) {
                    List<FetchedWorkItem> batch = node.fetchWorkItems(LOCK, WorkBatch.upTo(25), owner,
                            TagFilter.any());
                    received.get(me).addAll(ids(batch));
                    claimed.addAndGet(batch.size());
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            f.get(90, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
        List<Long> all = new ArrayList<>();
        received.forEach(all::addAll);
        assertEquals(total, all.size(), "every item delivered");
        assertEquals(total, new HashSet<>(all).size(), "no item delivered twice");
        Map<String, Integer> ownerOfSession = new HashMap<>();
        for (int t = 0; t < threads; t++) {
            Map<String, Long> lastOfSession = new HashMap<>();
            for (long item : received.get(t)) {
                String s = sessionOf.get(item);
                if (s == null) {
                    continue;
                }
                Integer previousOwner = ownerOfSession.putIfAbsent(s, t);
                assertTrue(previousOwner == null || previousOwner == t, "session " + s + " went to one owner");
                Long last = lastOfSession.put(s, item);
                assertTrue(last == null || last < item, "session " + s + " out of order: " + last + " then " + item);
            }
        }
        assertEquals(sessions, ownerOfSession.size());
    }

    @Test
    void the_reply_is_bounded_by_bytes_and_a_full_reply_returns_below_the_minimum() {
        PostgresProvider p = provider(b -> b.fetchBatchMaxBytes(4096));
        String input = "\"" + "x".repeat(1000) + "\"";
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            items.add(activity(i, null, null, input));
        }
        p.enqueueAllForWorker(items);
        int size = items.get(0).toJson().getBytes(StandardCharsets.UTF_8).length;
        int fit = 4096 / size;
        assertTrue(fit >= 2 && fit < 10, "the test's items must span several replies: " + size + " bytes each");
        assertEquals(range(0, fit), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any())));
        long start = System.nanoTime();
        List<FetchedWorkItem> full = p.fetchWorkItems(LOCK, new WorkBatch(10, 10, Duration.ofSeconds(30)), null,
                TagFilter.any());
        assertEquals(range(fit, 2L * fit), ids(full), "a full reply ends the fetch below its minimum");
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "without waiting for maxWait");
    }

    @Test
    void an_item_larger_than_the_reply_bound_still_goes_out_alone() {
        PostgresProvider p = provider(b -> b.fetchBatchMaxBytes(2048));
        p.enqueueAllForWorker(List.of(activity(0, null, null, "\"" + "y".repeat(5000) + "\""),
                activity(1, null, null, "{}"), activity(2, null, null, "{}")));
        List<FetchedWorkItem> first = p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any());
        assertEquals(List.of(0L), ids(first), "the first item is returned whole, and alone");
        assertEquals(List.of(1L, 2L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any())));
    }

    @Test
    void an_undecodable_item_is_released_and_the_rest_of_the_batch_is_returned() {
        PostgresProvider p = provider();
        String schema = p.config().schema();
        enqueue(p, 0, 1);
        BatchDb.execute("INSERT INTO " + q(schema) + ".worker_queue (work_item, visible_at_ms, created_at_ms, "
                + "instance_id, execution_id, activity_id) VALUES ('not json', 0, 0, 'inst', 1, 99)");
        enqueue(p, 2, 3);
        assertEquals(List.of(0L, 2L), ids(p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any())));
        assertEquals(List.of(1L), BatchDb.longs("SELECT attempt_count FROM " + q(schema)
                + ".worker_queue WHERE activity_id = 99 AND lock_token IS NULL"), "released, attempt counted");
        ProviderException e = assertThrows(ProviderException.class,
                () -> p.fetchWorkItems(LOCK, WorkBatch.upTo(10), null, TagFilter.any()));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("cannot be decoded"), e.getMessage());
        assertEquals(1, BatchDb.count(schema, "worker_queue WHERE activity_id = 99 AND lock_token IS NULL"),
                "a batch fetch that throws holds no lock");
    }

    @Test
    void bad_arguments_are_permanent_errors() {
        PostgresProvider p = provider();
        ProviderException noBatch = assertThrows(ProviderException.class,
                () -> p.fetchWorkItems(LOCK, null, null, TagFilter.any()));
        assertFalse(noBatch.retryable());
        assertTrue(noBatch.getMessage().contains("batch is null"), noBatch.getMessage());
        ProviderException noLock = assertThrows(ProviderException.class,
                () -> p.fetchWorkItems(Duration.ZERO, WorkBatch.upTo(5), null, TagFilter.any()));
        assertTrue(noLock.getMessage().contains("lockTimeout"), noLock.getMessage());
        assertThrows(ProviderException.class, () -> p.fetchWorkItems(LOCK, WorkBatch.upTo(5), null, null));
        assertEquals(List.of(), p.fetchWorkItems(LOCK, WorkBatch.upTo(5), null, TagFilter.any()));
    }
}
