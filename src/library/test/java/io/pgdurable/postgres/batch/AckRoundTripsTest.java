package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.activity;
import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.OffsetClock;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The two operations that save round trips on the worker queue: {@code ackWorkItemAndFetchNext} (ack and next claim
 * in one transaction) and {@code ackWorkItems} (a list of acks in one call, per-item outcomes). Their ack halves are
 * also run through the worker-queue conformance modules (package {@code postgres.acks}).
 */
class AckRoundTripsTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private final Hubs hubs = new Hubs("ackrt");
    private final OffsetClock clock = new OffsetClock(0);
    private String schema;

    @AfterEach
    void stop() {
        hubs.close();
    }

    private PostgresProvider provider(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        schema = hubs.newSchema();
        return hubs.open(schema, b -> tune.apply(b.clock(clock)));
    }

    private PostgresProvider provider() {
        return provider(b -> b);
    }

    private static WorkItem.ActivityCompleted completion(long id) {
        return new WorkItem.ActivityCompleted("inst", 1, id, "\"r" + id + "\"");
    }

    private static long id(FetchedWorkItem f) {
        return ((WorkItem.ActivityExecute) f.item()).id();
    }

    private FetchedWorkItem fetch(PostgresProvider p) {
        return p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
    }

    private long completionsStored() {
        return BatchDb.count(schema, "orchestrator_queue WHERE kind = 'ActivityCompleted'");
    }

    // ------------------------------------------------------------------ ackWorkItemAndFetchNext

    @Test
    void ack_and_fetch_next_acks_and_claims_the_oldest_next_item_in_one_transaction() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2), activity(3)));
        FetchedWorkItem first = fetch(p);
        Optional<FetchedWorkItem> next = p.ackWorkItemAndFetchNext(first.lockToken(), completion(1), LOCK, null,
                TagFilter.defaultOnly());
        assertTrue(next.isPresent(), "the next item is claimed");
        assertEquals(2, id(next.get()), "FIFO: the oldest remaining item");
        assertEquals(1, next.get().attemptCount());
        assertNotEquals(first.lockToken(), next.get().lockToken());
        assertEquals(1, completionsStored(), "the completion is enqueued");
        assertEquals(List.of(2L, 3L), BatchDb.workerActivities(schema), "the acked item is gone");
        // Both writes are one transaction: the deleted row's xmax is the xmin of the claimed row's new version.
        assertEquals(1, BatchDb.longs("SELECT count(*) FROM " + q(schema) + ".worker_queue w JOIN " + q(schema)
                + ".orchestrator_queue o ON o.xmin::text = w.xmin::text WHERE w.lock_token IS NOT NULL").get(0));
        // The lease taken is a real one: the item is invisible to others and its token acks it.
        assertEquals(3, id(fetch(p)));
        p.ackWorkItem(next.get().lockToken(), null);
        assertEquals(List.of(3L), BatchDb.workerActivities(schema));
    }

    @Test
    void a_failed_ack_claims_nothing() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2)));
        FetchedWorkItem first = fetch(p);
        clock.advance(LOCK.plusSeconds(1)); // the lease has expired
        ProviderException e = assertThrows(ProviderException.class, () -> p.ackWorkItemAndFetchNext(
                first.lockToken(), completion(1), LOCK, null, TagFilter.defaultOnly()));
        assertFalse(e.retryable());
        assertEquals("PD001", e.sqlState().orElse(null), e.getMessage());
        assertTrue(e.getMessage().contains("expired"), e.getMessage());
        assertEquals(0, completionsStored(), "no completion");
        assertEquals(0, BatchDb.count(schema, "worker_queue WHERE id > 1 AND lock_token IS NOT NULL"),
                "the next item was not claimed");
        assertThrows(ProviderException.class, () -> p.ackWorkItemAndFetchNext("no-such-token", null, LOCK, null,
                TagFilter.defaultOnly()));
        assertEquals(0, BatchDb.longs("SELECT attempt_count FROM " + q(schema) + ".worker_queue WHERE activity_id = 2")
                .get(0), "its attempt was not counted");
    }

    @Test
    void an_empty_queue_returns_empty_after_the_ack() {
        PostgresProvider p = provider();
        p.enqueueForWorker(activity(1));
        FetchedWorkItem first = fetch(p);
        assertTrue(p.ackWorkItemAndFetchNext(first.lockToken(), null, LOCK, null, TagFilter.defaultOnly()).isEmpty());
        assertEquals(0, BatchDb.count(schema, "worker_queue"), "acked");
        assertThrows(ProviderException.class, () -> p.ackWorkItem(first.lockToken(), null), "acked exactly once");
    }

    @Test
    void the_next_claim_follows_the_tag_filter_and_session_rules() {
        PostgresProvider p = provider();
        p.enqueueForWorker(activity(1));
        p.enqueueForWorker(new WorkItem.ActivityExecute("inst", 1, 2, "A", "{}", null, "gpu"));
        p.enqueueForWorker(new WorkItem.ActivityExecute("inst", 1, 3, "A", "{}", "s1", null));
        p.enqueueForWorker(activity(4));
        FetchedWorkItem first = fetch(p);
        Optional<FetchedWorkItem> gpu = p.ackWorkItemAndFetchNext(first.lockToken(), null, LOCK, null,
                TagFilter.tags("gpu"));
        assertEquals(2, id(gpu.orElseThrow()), "only the tagged item matches");
        Optional<FetchedWorkItem> untagged = p.ackWorkItemAndFetchNext(gpu.get().lockToken(), null, LOCK, null,
                TagFilter.defaultOnly());
        assertEquals(4, id(untagged.orElseThrow()), "no session config: the session item is skipped");
        SessionFetchConfig owner = new SessionFetchConfig("worker-a", Duration.ofSeconds(30));
        Optional<FetchedWorkItem> session = p.ackWorkItemAndFetchNext(untagged.get().lockToken(), null, LOCK, owner,
                TagFilter.defaultOnly());
        assertEquals(3, id(session.orElseThrow()), "with a session config the session item is claimed");
        assertEquals(List.of("worker-a"), BatchDb.strings("SELECT worker_id FROM " + q(schema)
                + ".sessions WHERE session_id = 's1'"), "and its session lease taken");
        assertTrue(p.ackWorkItemAndFetchNext(session.get().lockToken(), null, LOCK, null, TagFilter.none()).isEmpty(),
                "TagFilter.none acks and claims nothing");
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
    }

    @Test
    void an_undecodable_next_item_is_released_and_reported_by_the_next_fetch() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2)));
        BatchDb.execute("UPDATE " + q(schema) + ".worker_queue SET work_item = '{broken' WHERE activity_id = 2");
        FetchedWorkItem first = fetch(p);
        assertTrue(p.ackWorkItemAndFetchNext(first.lockToken(), null, LOCK, null, TagFilter.defaultOnly()).isEmpty(),
                "the ack stands; the broken item is not returned");
        assertEquals(List.of(2L), BatchDb.workerActivities(schema), "acked; the broken item stays queued");
        assertEquals(0, BatchDb.count(schema, "worker_queue WHERE lock_token IS NOT NULL"), "and released");
        ProviderException e = assertThrows(ProviderException.class, () -> fetch(p));
        assertTrue(e.getMessage().contains("cannot be decoded"), e.getMessage());
    }

    @Test
    void argument_errors_are_permanent_and_change_nothing() {
        PostgresProvider p = provider();
        p.enqueueForWorker(activity(1));
        FetchedWorkItem first = fetch(p);
        assertFalse(assertThrows(ProviderException.class, () -> p.ackWorkItemAndFetchNext(null, null, LOCK, null,
                TagFilter.defaultOnly())).retryable());
        assertFalse(assertThrows(ProviderException.class, () -> p.ackWorkItemAndFetchNext(first.lockToken(), null,
                Duration.ZERO, null, TagFilter.defaultOnly())).retryable());
        assertFalse(assertThrows(ProviderException.class, () -> p.ackWorkItemAndFetchNext(first.lockToken(), null,
                LOCK, null, null)).retryable());
        ProviderException wrongKind = assertThrows(ProviderException.class, () -> p.ackWorkItemAndFetchNext(
                first.lockToken(), activity(9), LOCK, null, TagFilter.defaultOnly()));
        assertTrue(wrongKind.getMessage().contains("ActivityCompleted or ActivityFailed"), wrongKind.getMessage());
        assertEquals(1, BatchDb.count(schema, "worker_queue"), "nothing was acked");
        p.ackWorkItem(first.lockToken(), null);
    }

    // ------------------------------------------------------------------ ackWorkItems

    @Test
    void ack_work_items_gives_each_ack_its_own_outcome_in_one_transaction() {
        PostgresProvider p = provider();
        List<WorkItem> items = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            items.add(activity(i));
        }
        p.enqueueAllForWorker(items);
        List<FetchedWorkItem> got = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            got.add(fetch(p));
        }
        p.ackWorkItem(got.get(2).lockToken(), null); // acked before: its second ack must fail
        List<AckResult> results = p.ackWorkItems(List.of(
                new WorkAck(got.get(0).lockToken(), completion(1)),
                new WorkAck("unknown-token", null),
                new WorkAck(got.get(1).lockToken(), null),
                new WorkAck(got.get(2).lockToken(), completion(3)),
                new WorkAck(got.get(1).lockToken(), null),
                new WorkAck(got.get(3).lockToken(), completion(4))));
        assertEquals(6, results.size());
        assertTrue(results.get(0).isAcked());
        assertFalse(results.get(1).isAcked());
        assertTrue(results.get(2).isAcked());
        assertFalse(results.get(3).isAcked(), "already acked");
        assertFalse(results.get(4).isAcked(), "a token given twice is acked once");
        assertTrue(results.get(5).isAcked());
        for (int i : new int[] {1, 3, 4}) {
            ProviderException e = results.get(i).error();
            assertEquals("ackWorkItems", e.operation());
            assertEquals("PD001", e.sqlState().orElse(null));
            assertFalse(e.retryable());
            assertTrue(e.getMessage().contains("not found"), e.getMessage());
        }
        assertEquals("unknown-token", results.get(1).lockToken());
        assertEquals(List.of(5L), BatchDb.workerActivities(schema));
        assertEquals(List.of(1L, 4L), BatchDb.strings("SELECT work_item FROM " + q(schema)
                + ".orchestrator_queue ORDER BY id").stream()
                .map(json -> ((WorkItem.ActivityCompleted) WorkItem.fromJson(json)).id()).toList(),
                "completions of the acked items only, in list order");
        assertEquals(List.of(2L), BatchDb.rowsPerTransaction(schema, "orchestrator_queue"), "one transaction");
    }

    @Test
    void ack_work_items_reports_an_expired_lease_and_acks_the_rest() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2)));
        FetchedWorkItem shortLease = p.fetchWorkItem(Duration.ofSeconds(1), Duration.ZERO, null,
                TagFilter.defaultOnly()).orElseThrow();
        FetchedWorkItem longLease = fetch(p);
        clock.advance(Duration.ofSeconds(2));
        List<AckResult> results = p.ackWorkItems(List.of(new WorkAck(shortLease.lockToken(), null),
                new WorkAck(longLease.lockToken(), null)));
        assertFalse(results.get(0).isAcked());
        assertTrue(results.get(0).error().getMessage().contains("expired"), results.get(0).error().getMessage());
        assertTrue(results.get(1).isAcked());
        assertEquals(List.of(1L), BatchDb.workerActivities(schema), "the expired item stays for redelivery");
    }

    @Test
    void ack_work_items_checks_every_argument_before_acking_anything() {
        PostgresProvider p = provider(b -> b.ackBatchSize(8));
        p.enqueueAllForWorker(List.of(activity(1), activity(2)));
        FetchedWorkItem a = fetch(p);
        FetchedWorkItem b = fetch(p);
        ProviderException noToken = assertThrows(ProviderException.class, () -> p.ackWorkItems(List.of(
                new WorkAck(a.lockToken(), null), new WorkAck(null, null))));
        assertTrue(noToken.getMessage().contains("ack 1"), noToken.getMessage());
        ProviderException kind = assertThrows(ProviderException.class, () -> p.ackWorkItems(List.of(
                new WorkAck(a.lockToken(), null), new WorkAck(b.lockToken(), activity(7)))));
        assertTrue(kind.getMessage().contains("ack 1 completion"), kind.getMessage());
        assertFalse(kind.retryable());
        assertThrows(ProviderException.class, () -> p.ackWorkItems(null));
        assertEquals(2, BatchDb.count(schema, "worker_queue"), "nothing acked");
        assertEquals(List.of(), p.ackWorkItems(List.of()));
        assertTrue(p.ackWorkItems(List.of(new WorkAck(a.lockToken(), null), new WorkAck(b.lockToken(), null)))
                .stream().allMatch(AckResult::isAcked), "with ackBatchSize above 1 the list is acked directly too");
        assertEquals(0, p.pendingAcks());
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
    }

    @Test
    void ack_work_items_splits_long_lists_into_calls_of_a_thousand() {
        PostgresProvider p = provider();
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < 1500; i++) {
            items.add(activity(i));
        }
        p.enqueueAllForWorker(items);
        List<WorkAck> acks = new ArrayList<>();
        for (int i = 0; i < 1500; i++) {
            acks.add(new WorkAck(fetch(p).lockToken(), completion(i)));
        }
        List<AckResult> results = p.ackWorkItems(acks);
        assertEquals(1500, results.size());
        assertTrue(results.stream().allMatch(AckResult::isAcked));
        for (int i = 0; i < 1500; i++) {
            assertEquals(acks.get(i).lockToken(), results.get(i).lockToken(), "input order");
        }
        assertEquals(List.of(1000L, 500L), BatchDb.rowsPerTransaction(schema, "orchestrator_queue"));
    }
}
