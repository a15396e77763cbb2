package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.activity;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.BatchEnqueueException;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The SPI's default batch methods — what a provider that does not implement batching gets — run on the real
 * PostgreSQL provider: every single-item operation goes to it, the batch methods run their interface defaults.
 */
class SpiDefaultMethodsTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private static final Set<String> BATCH_METHODS = Set.of("fetchWorkItems", "enqueueAllForWorker",
            "enqueueAllForOrchestrator", "ackWorkItemAndFetchNext", "ackWorkItems");
    private String schema;
    private PostgresProvider real;
    private OrchestrationProvider plain;

    @BeforeEach
    void start() {
        schema = TestDatabase.newSchemaName("bspi");
        real = PostgresProvider.create(TestDatabase.config(schema).build());
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.isDefault() && BATCH_METHODS.contains(method.getName())) {
                return InvocationHandler.invokeDefault(proxy, method, args);
            }
            return forward(method, args);
        };
        plain = (OrchestrationProvider) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {OrchestrationProvider.class}, handler);
    }

    private Object forward(Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(real, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    @AfterEach
    void stop() {
        real.close();
        TestDatabase.dropSchema(schema);
    }

    @Test
    void the_default_enqueue_stores_one_by_one_and_reports_the_stored_prefix() {
        List<WorkItem> items = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            items.add(activity(i));
        }
        items.set(3, new WorkItem.ExternalRaised("inst", "e", "1")); // wrong queue
        BatchEnqueueException e = assertThrows(BatchEnqueueException.class, () -> plain.enqueueAllForWorker(items));
        assertFalse(e.retryable());
        assertEquals(List.of(0, 1, 2), e.stored());
        assertEquals(List.of(3, 4, 5), e.notStored());
        assertEquals(List.of(0L, 1L, 2L), BatchDb.workerActivities(schema), "stored exactly as reported");

        plain.enqueueAllForOrchestrator(List.of(new WorkItem.StartOrchestration("a", "O", "{}", "1.0.0"),
                new WorkItem.ExternalRaised("a", "e", "1")), null);
        assertEquals(2, BatchDb.count(schema, "orchestrator_queue"));
    }

    @Test
    void the_default_fetch_claims_one_by_one_up_to_the_maximum() {
        for (int i = 0; i < 5; i++) {
            real.enqueueForWorker(activity(i));
        }
        List<FetchedWorkItem> first = plain.fetchWorkItems(LOCK, WorkBatch.upTo(3), null, TagFilter.any());
        assertEquals(List.of(0L, 1L, 2L), first.stream().map(f -> ((WorkItem.ActivityExecute) f.item()).id()).toList());
        List<FetchedWorkItem> rest = plain.fetchWorkItems(LOCK, new WorkBatch(10, 5, Duration.ZERO), null,
                TagFilter.any());
        assertEquals(2, rest.size(), "stops at the first empty fetch, below the minimum when maxWait is zero");
        assertEquals(List.of(), plain.fetchWorkItems(LOCK, WorkBatch.upTo(3), null, TagFilter.any()));
        ProviderException e = assertThrows(ProviderException.class,
                () -> plain.fetchWorkItems(LOCK, null, null, TagFilter.any()));
        assertTrue(e.getMessage().contains("batch is null"), e.getMessage());
    }

    @Test
    void the_default_ack_and_fetch_next_acks_then_claims_without_waiting() {
        real.enqueueForWorker(activity(1));
        real.enqueueForWorker(activity(2));
        FetchedWorkItem first = real.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        FetchedWorkItem next = plain.ackWorkItemAndFetchNext(first.lockToken(), null, LOCK, null, TagFilter.any())
                .orElseThrow();
        assertEquals(2L, ((WorkItem.ActivityExecute) next.item()).id());
        assertEquals(List.of(2L), BatchDb.workerActivities(schema));
        assertThrows(ProviderException.class, () -> plain.ackWorkItemAndFetchNext(first.lockToken(), null, LOCK, null,
                TagFilter.any()), "a repeated ack fails");
        assertEquals(1, BatchDb.count(schema, "worker_queue WHERE lock_token IS NOT NULL"), "and claims nothing");
        long start = System.nanoTime();
        assertTrue(plain.ackWorkItemAndFetchNext(next.lockToken(), null, LOCK, null, TagFilter.any()).isEmpty());
        assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos(), "no waiting for work");
    }

    @Test
    void the_default_ack_list_acks_one_by_one_with_per_item_outcomes() {
        real.enqueueForWorker(activity(1));
        real.enqueueForWorker(activity(2));
        FetchedWorkItem a = real.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        FetchedWorkItem b = real.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        ProviderException bad = assertThrows(ProviderException.class, () -> plain.ackWorkItems(List.of(
                new WorkAck(a.lockToken(), null), new WorkAck(b.lockToken(), activity(3)))));
        assertTrue(bad.getMessage().contains("ack 1"), bad.getMessage());
        assertEquals(2, BatchDb.count(schema, "worker_queue"), "checked before anything was acked");
        List<AckResult> results = plain.ackWorkItems(List.of(new WorkAck(a.lockToken(), null),
                new WorkAck("unknown", null), new WorkAck(b.lockToken(), null)));
        assertEquals(List.of(true, false, true), results.stream().map(AckResult::isAcked).toList());
        assertFalse(results.get(1).error().retryable());
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
    }
}
