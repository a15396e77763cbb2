package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PostgreSQL-specific behaviour beyond the conformance kit: the Java-only additions of the contract (§7.20) and
 * the decisions of docs/decisions.md, each pinned.
 */
class PostgresProviderTest {
    private static final Duration LOCK = Duration.ofSeconds(30);
    private String schema;
    private PostgresProvider provider;
    private ProviderAdmin admin;
    private final List<PostgresProvider> extra = new ArrayList<>();

    @BeforeEach
    void start() {
        schema = TestDatabase.newSchemaName("prov");
        provider = PostgresProvider.create(TestDatabase.config(schema).build());
        admin = provider.asManagementCapability().orElseThrow();
    }

    @AfterEach
    void stop() {
        extra.forEach(PostgresProvider::close);
        provider.close();
        TestDatabase.dropSchema(schema);
    }

    private void createInstance(String id) {
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration(id, "Orch", "{}", "1.0.0"), null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.orchestrationStarted(1, "Orch", "1.0.0", "{}")),
                List.of(), List.of(), ExecutionMetadata.of("Orch", "1.0.0"), List.of());
    }

    private static void sleepUntil(long startNanos, long offsetMs) throws InterruptedException {
        long remaining = startNanos + TimeUnit.MILLISECONDS.toNanos(offsetMs) - System.nanoTime();
        if (remaining > 0) {
            TimeUnit.NANOSECONDS.sleep(remaining);
        }
    }

    @Test
    void abandoning_a_work_item_with_an_unknown_token_is_a_permanent_error() {
        ProviderException e = assertThrows(ProviderException.class,
                () -> provider.abandonWorkItem("lock_never_issued", null, false));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("Invalid lock token"), e.getMessage());
    }

    @Test
    void renewals_keep_millisecond_precision() throws InterruptedException {
        provider.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 1, "A", "{}"));
        FetchedWorkItem w = provider.fetchWorkItem(Duration.ofMillis(300), Duration.ZERO, null, TagFilter.any())
                .orElseThrow();
        long renewed = System.nanoTime();
        provider.renewWorkItemLock(w.lockToken(), Duration.ofMillis(700));
        sleepUntil(renewed, 450); // past the original 300 ms lease, inside the 700 ms renewal
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).isEmpty(),
                "a 700 ms renewal still holds at 450 ms");
        sleepUntil(renewed, 850);
        Optional<FetchedWorkItem> again = provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any());
        assertTrue(again.isPresent(), "the renewed lease ended at 700 ms, not rounded to whole seconds");
        assertEquals(2, again.get().attemptCount());
    }

    @Test
    void orchestration_renewal_keeps_millisecond_precision() throws InterruptedException {
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("i", "Orch", "{}", "1.0.0"), null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(Duration.ofMillis(300), Duration.ZERO, null)
                .orElseThrow();
        long renewed = System.nanoTime();
        provider.renewOrchestrationItemLock(f.lockToken(), Duration.ofMillis(700));
        sleepUntil(renewed, 450);
        assertTrue(provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).isEmpty());
        sleepUntil(renewed, 850);
        assertTrue(provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).isPresent());
    }

    @Test
    void two_providers_on_one_schema_never_deliver_an_item_twice() throws Exception {
        PostgresProvider peer = PostgresProvider.create(TestDatabase.config(schema).build());
        extra.add(peer);
        int items = 200;
        for (int i = 0; i < items; i++) {
            provider.enqueueForWorker(new WorkItem.ActivityExecute("i" + (i % 7), 1, i, "A", "{}"));
            provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("orch-" + i, "Orch", "{}", "1.0.0"), null);
        }
        List<Long> activities = Collections.synchronizedList(new ArrayList<>());
        List<String> instances = Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            PostgresProvider node = t % 2 == 0 ? provider : peer;
            done.add(pool.submit(() -> {
                go.await();
                while (true) {
                    Optional<FetchedWorkItem> w = node.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any());
                    Optional<FetchedOrchestration> o = node.fetchOrchestrationItem(LOCK, Duration.ZERO, null);
                    if (w.isEmpty() && o.isEmpty()) {
                        return null;
                    }
                    if (w.isPresent()) {
                        activities.add(((WorkItem.ActivityExecute) w.get().item()).id());
                        node.ackWorkItem(w.get().lockToken(), null);
                    }
                    if (o.isPresent()) {
                        instances.add(o.get().item().instance());
                        node.ackOrchestrationItem(o.get().lockToken(), 1, List.of(), List.of(), List.of(),
                                ExecutionMetadata.empty(), List.of());
                    }
                }
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
        assertEquals(items, activities.size(), "every activity delivered");
        assertEquals(items, new HashSet<>(activities).size(), "no activity delivered twice");
        assertEquals(items, instances.size(), "every instance turn delivered");
        assertEquals(items, new HashSet<>(instances).size(), "no instance turn delivered twice");
    }

    @Test
    void a_function_replaced_under_traffic_is_retried_transparently() throws Exception {
        PostgresProvider single = PostgresProvider.create(TestDatabase.config(schema).poolSize(1).build());
        extra.add(single);
        createInstance("i");
        // Warm the statement up so the driver uses a server-side prepared statement with a cached plan.
        for (int i = 0; i < 10; i++) {
            assertEquals(1, single.read("i").size());
        }
        String s = Identifiers.quote(schema);
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute("DROP FUNCTION " + s + ".read_history(TEXT, BIGINT)");
            st.execute("CREATE FUNCTION " + s + ".read_history(p_instance TEXT, p_execution_id BIGINT) "
                    + "RETURNS TABLE (event_id BIGINT, event_type TEXT, event_data TEXT, note TEXT) "
                    + "LANGUAGE sql STABLE AS $$ SELECT h.event_id, h.event_type, h.event_data, 'v2'::TEXT "
                    + "FROM " + s + ".history h WHERE h.instance_id = p_instance ORDER BY h.event_id $$");
        }
        assertEquals(1, single.read("i").size(), "the 0A000 'cached plan must not change result type' was retried");
    }

    @Test
    void abandon_with_delay_hides_only_the_abandoned_batch() throws InterruptedException {
        createInstance("i");
        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("i", "first", "1"), null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("i", "arrived-during-turn", "2"), null);
        provider.abandonOrchestrationItem(f.lockToken(), Duration.ofMillis(600), false);
        long abandoned = System.nanoTime();
        FetchedOrchestration late = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(List.of("arrived-during-turn"), late.item().messages().stream()
                .map(m -> ((WorkItem.ExternalRaised) m).name()).toList(), "the late message is not delayed");
        provider.abandonOrchestrationItem(late.lockToken(), null, false);
        FetchedOrchestration again = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals(1, again.item().messages().size(), "the delayed message is still hidden");
        provider.abandonOrchestrationItem(again.lockToken(), null, false);
        sleepUntil(abandoned, 750);
        assertEquals(2, provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow().item().messages()
                .size(), "after the delay both messages are visible");
    }

    @Test
    void a_message_that_cannot_start_its_instance_stays_queued_and_the_fetch_moves_on() {
        provider.enqueueForOrchestrator(new WorkItem.CancelInstance("ghost", "no start yet"), null);
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("real", "Orch", "{}", "1.0.0"), null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals("real", f.item().instance(), "the fetch did not stop at the instance that cannot run");
        assertEquals(1, admin.getQueueDepths().orchestratorQueue(), "the cancel is kept for when the start arrives");
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("ghost", "Orch", "{}", "1.0.0"), null);
        FetchedOrchestration ghost = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        assertEquals("ghost", ghost.item().instance());
        assertEquals(2, ghost.item().messages().size(), "cancel and start arrive together");
    }

    @Test
    void continued_as_new_records_a_completion_time() {
        createInstance("i");
        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("i", "poke", "1"), null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        long before = System.currentTimeMillis();
        provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.orchestrationContinuedAsNew(2, "next")),
                List.of(), List.of(), ExecutionMetadata.empty().withStatus(ExecutionMetadata.CONTINUED_AS_NEW, "next"),
                List.of());
        long completed = admin.getExecutionInfo("i", 1).completedAtMs().orElseThrow();
        assertTrue(completed >= before - 1000 && completed <= System.currentTimeMillis() + 1000);
    }

    @Test
    void append_with_execution_keeps_existing_events() {
        provider.appendWithExecution("i", 1, List.of(Events.externalEvent(1, "original", "1")));
        provider.appendWithExecution("i", 1, List.of(Events.externalEvent(1, "overwrite", "2"),
                Events.externalEvent(2, "new", "3")));
        List<String> names = provider.readWithExecution("i", 1).stream()
                .map(e -> (String) io.pgdurable.spi.Json.parseObject(e.data()).get("name")).toList();
        assertEquals(List.of("original", "new"), names);
    }

    @Test
    void latest_execution_of_an_unknown_instance_is_not_found() {
        ProviderException e = assertThrows(ProviderException.class, () -> admin.latestExecutionId("nope"));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("not found"), e.getMessage());
    }

    @Test
    void a_closed_provider_refuses_work_permanently() {
        PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema).build());
        p.close();
        p.close(); // idempotent
        ProviderException e = assertThrows(ProviderException.class,
                () -> p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("closed"));
    }

    @Test
    void an_unreachable_database_is_a_retryable_error_without_the_password() {
        ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                PostgresProviderConfig.builder()
                        .jdbcUrl("jdbc:postgresql://127.0.0.1:1/test?user=postgres&password=hunter2&connectTimeout=2")
                        .connectionTimeout(Duration.ofMillis(500)).schema("s").build()));
        assertTrue(e.retryable(), e.getMessage());
        assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
        Set<String> seen = new HashSet<>();
        for (Throwable t = e; t != null && seen.add(t.toString()); t = t.getCause()) {
            assertFalse(String.valueOf(t.getMessage()).contains("hunter2"), "cause leaks the password: " + t);
        }
    }
}
