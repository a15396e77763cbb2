package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.activity;
import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.OffsetClock;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Batched terminal acks: opt-in, per-item outcomes, one transaction per flush, the close barrier. */
class BatchAckTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private final Hubs hubs = new Hubs("back");
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void stop() {
        threads.shutdownNow();
        hubs.close();
    }

    private PostgresProvider provider(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        return hubs.open(tune);
    }

    private static WorkItem.ActivityCompleted completion(long id) {
        return new WorkItem.ActivityCompleted("inst", 1, id, "\"r" + id + "\"");
    }

    private static long id(FetchedWorkItem f) {
        return ((WorkItem.ActivityExecute) f.item()).id();
    }

    private static void enqueue(PostgresProvider p, int n) {
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            items.add(activity(i));
        }
        p.enqueueAllForWorker(items);
    }

    /** Activity ids of the completions in the orchestrator queue, in row order. */
    private static List<Long> completedIds(String schema) {
        List<Long> out = new ArrayList<>();
        for (String json : BatchDb.strings("SELECT work_item FROM " + q(schema) + ".orchestrator_queue ORDER BY id")) {
            out.add(((WorkItem.ActivityCompleted) WorkItem.fromJson(json)).id());
        }
        return out;
    }

    /** Acks each item on a thread of its own, all released together; returns each ack's error or null. */
    private List<ProviderException> ackTogether(PostgresProvider p, List<FetchedWorkItem> items) throws Exception {
        CyclicBarrier barrier = new CyclicBarrier(items.size());
        List<Future<ProviderException>> outcomes = new ArrayList<>();
        for (FetchedWorkItem f : items) {
            outcomes.add(threads.submit(() -> {
                barrier.await(10, TimeUnit.SECONDS);
                try {
                    p.ackWorkItem(f.lockToken(), completion(id(f)));
                    return null;
                } catch (ProviderException e) {
                    return e;
                }
            }));
        }
        List<ProviderException> out = new ArrayList<>();
        for (Future<ProviderException> f : outcomes) {
            out.add(f.get(30, TimeUnit.SECONDS));
        }
        return out;
    }

    private static boolean flusherThreadRuns(String schema) {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().equals("pgdurable-acks-" + schema) && t.isAlive());
    }

    @Test
    void batch_size_one_is_the_default_and_acks_inside_the_callers_call() {
        OffsetClock clock = new OffsetClock(0);
        PostgresProvider p = provider(b -> b.clock(clock));
        String schema = p.config().schema();
        assertEquals(1, p.config().ackBatchSize());
        assertFalse(flusherThreadRuns(schema), "no background flusher without batching");
        enqueue(p, 2);
        FetchedWorkItem first = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        FetchedWorkItem second = p.fetchWorkItem(Duration.ofSeconds(1), Duration.ZERO, null, TagFilter.any())
                .orElseThrow();
        p.ackWorkItem(first.lockToken(), completion(id(first)));
        assertEquals(0, p.pendingAcks());
        assertEquals(List.of(id(first)), completedIds(schema), "stored when the call returns");
        clock.advance(Duration.ofSeconds(2));
        ProviderException e = assertThrows(ProviderException.class,
                () -> p.ackWorkItem(second.lockToken(), completion(id(second))));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("Invalid lock token: the work item lease expired"), e.getMessage());
    }

    @Test
    void sixteen_per_flush_with_eight_consumers_acks_every_item_exactly_once() throws Exception {
        PostgresProvider p = provider(b -> b.poolSize(6).ackBatchSize(16).ackFlushIdle(Duration.ofMillis(20)));
        String schema = p.config().schema();
        assertTrue(flusherThreadRuns(schema));
        int n = 400;
        enqueue(p, n);
        int consumers = 8;
        List<Future<Integer>> done = new ArrayList<>();
        for (int t = 0; t < consumers; t++) {
            boolean batched = t % 2 == 0;
            done.add(threads.submit(() -> {
                int acked = 0;
                while (true) {
                    List<FetchedWorkItem> got = batched
                            ? p.fetchWorkItems(LOCK, WorkBatch.upTo(3), null, TagFilter.any())
                            : p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).stream().toList();
                    if (got.isEmpty()) {
                        return acked;
                    }
                    for (FetchedWorkItem f : got) {
                        p.ackWorkItem(f.lockToken(), completion(id(f)));
                        acked++;
                    }
                }
            }));
        }
        int acked = 0;
        for (Future<Integer> f : done) {
            acked += f.get(120, TimeUnit.SECONDS);
        }
        assertEquals(n, acked, "every ack call returned normally");
        assertEquals(0, BatchDb.count(schema, "worker_queue"), "every item deleted");
        List<Long> completed = completedIds(schema);
        assertEquals(n, completed.size(), "one completion per item");
        assertEquals(n, new HashSet<>(completed).size(), "no completion twice");
        List<Long> perFlush = BatchDb.rowsPerTransaction(schema, "orchestrator_queue");
        assertTrue(perFlush.size() < n, "acks were flushed together: " + perFlush.size() + " transactions");
        assertTrue(perFlush.stream().allMatch(k -> k <= 16), "never more than ackBatchSize per flush: " + perFlush);
        assertEquals(0, p.pendingAcks());
    }

    @Test
    void a_full_buffer_is_flushed_at_once_as_one_transaction() throws Exception {
        PostgresProvider p = provider(b -> b.poolSize(4).ackBatchSize(8).ackFlushIdle(Duration.ofSeconds(1)));
        String schema = p.config().schema();
        enqueue(p, 8);
        List<FetchedWorkItem> items = p.fetchWorkItems(LOCK, WorkBatch.upTo(8), null, TagFilter.any());
        assertEquals(8, items.size());
        List<ProviderException> outcomes = ackTogether(p, items);
        outcomes.forEach(e -> assertNull(e, () -> "ack failed: " + e));
        assertEquals(List.of(8L), BatchDb.rowsPerTransaction(schema, "orchestrator_queue"),
                "eight completions, one transaction");
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
    }

    @Test
    void a_lone_ack_is_flushed_when_no_other_ack_follows() {
        PostgresProvider p = provider(b -> b.ackBatchSize(16));
        String schema = p.config().schema();
        enqueue(p, 1);
        FetchedWorkItem f = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> p.ackWorkItem(f.lockToken(), completion(id(f))),
                "the ack does not wait for the buffer to fill");
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
        assertEquals(List.of(0L), completedIds(schema));
    }

    @Test
    void zero_idle_flushes_as_soon_as_the_flusher_is_free() {
        PostgresProvider p = provider(b -> b.ackBatchSize(4).ackFlushIdle(Duration.ZERO));
        String schema = p.config().schema();
        enqueue(p, 3);
        for (FetchedWorkItem f : p.fetchWorkItems(LOCK, WorkBatch.upTo(3), null, TagFilter.any())) {
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> p.ackWorkItem(f.lockToken(), null));
        }
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
        assertEquals(0, BatchDb.count(schema, "orchestrator_queue"), "an ack without completion enqueues nothing");
    }

    @Test
    void a_lost_lease_fails_only_its_own_item_in_the_batch() throws Exception {
        OffsetClock clock = new OffsetClock(0);
        PostgresProvider p = provider(b -> b.clock(clock).poolSize(4).ackBatchSize(8)
                .ackFlushIdle(Duration.ofSeconds(1)));
        String schema = p.config().schema();
        // An orchestration that schedules activity 7 and then cancels it.
        p.enqueueForOrchestrator(new WorkItem.StartOrchestration("inst", "Orch", "{}", "1.0.0"), null);
        FetchedOrchestration turn = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        p.ackOrchestrationItem(turn.lockToken(), 1, List.of(), List.of(activity(7)), List.of(),
                ExecutionMetadata.of("Orch", "1.0.0"), List.of());
        FetchedWorkItem cancelled = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        // Item 6 gets a short lease that will have expired when it is acked.
        p.enqueueForWorker(activity(6));
        FetchedWorkItem expired = p.fetchWorkItem(Duration.ofSeconds(1), Duration.ZERO, null, TagFilter.any())
                .orElseThrow();
        enqueue(p, 6);
        List<FetchedWorkItem> live = p.fetchWorkItems(LOCK, WorkBatch.upTo(6), null, TagFilter.any());
        assertEquals(6, live.size());
        p.enqueueForOrchestrator(new WorkItem.ExternalRaised("inst", "go", "1"), null);
        FetchedOrchestration cancel = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        p.ackOrchestrationItem(cancel.lockToken(), 1, List.of(), List.of(), List.of(), ExecutionMetadata.empty(),
                List.of(new ScheduledActivityIdentifier("inst", 1, 7)));
        clock.advance(Duration.ofSeconds(2));

        List<FetchedWorkItem> all = new ArrayList<>(live);
        all.add(expired);
        all.add(cancelled);
        List<ProviderException> outcomes = ackTogether(p, all);
        for (int i = 0; i < 6; i++) {
            assertNull(outcomes.get(i), "live item " + id(all.get(i)) + " acked: " + outcomes.get(i));
        }
        ProviderException lapsed = outcomes.get(6);
        assertNotNull(lapsed, "the expired item's ack must fail");
        assertFalse(lapsed.retryable());
        assertTrue(lapsed.getMessage().contains("Invalid lock token: the work item lease expired"),
                lapsed.getMessage());
        ProviderException gone = outcomes.get(7);
        assertNotNull(gone, "the cancelled item's ack must fail");
        assertFalse(gone.retryable());
        assertTrue(gone.getMessage().contains("Invalid lock token: worker queue item not found"), gone.getMessage());

        assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L), completedIds(schema).stream().sorted().toList(),
                "completions of the six live items only");
        assertEquals(List.of(6L), BatchDb.rowsPerTransaction(schema, "orchestrator_queue"),
                "all of them from one flush");
        Optional<FetchedWorkItem> redelivered = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any());
        assertEquals(6L, id(redelivered.orElseThrow()), "the expired item is still queued and redelivered");
        assertEquals(2, redelivered.get().attemptCount());
    }

    @Test
    void the_same_token_acked_twice_in_one_flush_is_acked_once() throws Exception {
        PostgresProvider p = provider(b -> b.ackBatchSize(2).ackFlushIdle(Duration.ofSeconds(1)));
        String schema = p.config().schema();
        enqueue(p, 1);
        FetchedWorkItem f = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        List<ProviderException> outcomes = ackTogether(p, List.of(f, f));
        assertEquals(1, outcomes.stream().filter(e -> e == null).count(), "one ack wins: " + outcomes);
        ProviderException loser = outcomes.stream().filter(e -> e != null).findFirst().orElseThrow();
        assertTrue(loser.getMessage().contains("Invalid lock token"), loser.getMessage());
        assertEquals(List.of(0L), completedIds(schema), "one completion");
    }

    @Test
    void a_batched_ack_marks_the_items_session_active() {
        OffsetClock clock = new OffsetClock(0);
        PostgresProvider p = provider(b -> b.clock(clock).ackBatchSize(4));
        String schema = p.config().schema();
        p.enqueueForWorker(new WorkItem.ActivityExecute("inst", 1, 0, "A", "{}", "sess", null));
        FetchedWorkItem f = p.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", LOCK),
                TagFilter.any()).orElseThrow();
        clock.advance(Duration.ofSeconds(5));
        long before = clock.millis();
        p.ackWorkItem(f.lockToken(), completion(0));
        long activity = BatchDb.longs("SELECT last_activity_at_ms FROM " + q(schema) + ".sessions").get(0);
        assertTrue(activity >= before, "last activity moved to the ack time: " + activity + " < " + before);
    }

    @Test
    void abandon_renew_and_attempt_counts_stay_per_item_with_batching_on() {
        PostgresProvider p = provider(b -> b.ackBatchSize(8));
        enqueue(p, 2);
        List<FetchedWorkItem> items = p.fetchWorkItems(LOCK, WorkBatch.upTo(2), null, TagFilter.any());
        p.abandonWorkItem(items.get(0).lockToken(), null, false);
        p.renewWorkItemLock(items.get(1).lockToken(), LOCK);
        assertEquals(0, p.pendingAcks(), "abandon and renew do not go through the ack buffer");
        FetchedWorkItem again = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        assertEquals(2, again.attemptCount(), "the abandoned item's attempt was counted");
        ProviderException e = assertThrows(ProviderException.class, () -> p.abandonWorkItem(
                items.get(0).lockToken(), null, false));
        assertTrue(e.getMessage().contains("Invalid lock token"), e.getMessage());
        p.ackWorkItem(again.lockToken(), null);
        p.ackWorkItem(items.get(1).lockToken(), null);
        assertEquals(0, BatchDb.count(p.config().schema(), "worker_queue"));
    }

    @Test
    void close_drains_buffered_acks_and_later_acks_fail() throws Exception {
        PostgresProvider p = provider(b -> b.poolSize(4).ackBatchSize(16).ackFlushIdle(Duration.ofSeconds(1)));
        String schema = p.config().schema();
        enqueue(p, 5);
        List<FetchedWorkItem> items = p.fetchWorkItems(LOCK, WorkBatch.upTo(5), null, TagFilter.any());
        List<CompletableFuture<Void>> acks = new ArrayList<>();
        for (FetchedWorkItem f : items.subList(0, 4)) {
            acks.add(CompletableFuture.runAsync(() -> p.ackWorkItem(f.lockToken(), completion(id(f))), threads));
        }
        BatchDb.awaitTrue("four acks are buffered", Duration.ofSeconds(10), () -> p.pendingAcks() == 4);
        assertTrue(flusherThreadRuns(schema));
        p.close();
        for (CompletableFuture<Void> ack : acks) {
            ack.get(10, TimeUnit.SECONDS); // each returned normally: its item was flushed by close()
        }
        assertEquals(List.of(0L, 1L, 2L, 3L), completedIds(schema).stream().sorted().toList());
        assertEquals(List.of(4L), BatchDb.workerActivities(schema), "only the unacked item is left");
        assertFalse(flusherThreadRuns(schema), "the flusher ended");
        ProviderException after = assertThrows(ProviderException.class,
                () -> p.ackWorkItem(items.get(4).lockToken(), null));
        assertFalse(after.retryable());
        assertTrue(after.getMessage().contains("closed"), after.getMessage());
    }

    @Test
    void acks_not_flushed_within_the_drain_timeout_fail_retryably_and_keep_their_lease() throws Exception {
        PostgresProvider p = provider(b -> b.ackBatchSize(16).ackFlushIdle(Duration.ofSeconds(1))
                .ackDrainTimeout(Duration.ZERO));
        String schema = p.config().schema();
        enqueue(p, 3);
        List<FetchedWorkItem> items = p.fetchWorkItems(LOCK, WorkBatch.upTo(3), null, TagFilter.any());
        List<CompletableFuture<Void>> acks = new ArrayList<>();
        for (FetchedWorkItem f : items) {
            acks.add(CompletableFuture.runAsync(() -> p.ackWorkItem(f.lockToken(), completion(id(f))), threads));
        }
        BatchDb.awaitTrue("three acks are buffered", Duration.ofSeconds(10), () -> p.pendingAcks() == 3);
        p.close();
        for (CompletableFuture<Void> ack : acks) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> ack.get(10, TimeUnit.SECONDS));
            ProviderException pe = (ProviderException) e.getCause();
            assertTrue(pe.retryable(), pe.getMessage());
            assertTrue(pe.getMessage().contains("redelivered after its lease expires"), pe.getMessage());
        }
        assertEquals(0, BatchDb.count(schema, "orchestrator_queue"), "nothing was acked");
        assertEquals(3, BatchDb.count(schema, "worker_queue WHERE lock_token IS NOT NULL"),
                "the items keep their leases and come back when they expire");
    }
}
