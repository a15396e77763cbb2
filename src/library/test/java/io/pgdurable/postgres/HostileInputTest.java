package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** What a new user tries by mistake: each gets a clear permanent error, and nothing stored is lost or changed. */
class HostileInputTest {
    private static final Duration LOCK = Duration.ofSeconds(30);
    private String schema;
    private PostgresProvider provider;
    private ProviderAdmin admin;

    @BeforeEach
    void start() {
        schema = TestDatabase.newSchemaName("hostile");
        provider = PostgresProvider.create(TestDatabase.config(schema).build());
        admin = provider.asManagementCapability().orElseThrow();
    }

    @AfterEach
    void stop() {
        provider.close();
        TestDatabase.dropSchema(schema);
    }

    /** Creates instance "i1" with one history event and a queued external event; returns nothing locked. */
    private void createInstanceWithPendingEvent() {
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("i1", "Orch", "{}", "1.0.0"), null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.orchestrationStarted(1, "Orch", "1.0.0", "{}")),
                List.of(), List.of(), ExecutionMetadata.of("Orch", "1.0.0"), List.of());
        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("i1", "poke", "\"data\""), null);
    }

    private static ProviderException permanent(Executable call, String expectedFragment) {
        ProviderException e = assertThrows(ProviderException.class, call);
        assertFalse(e.retryable(), "must be permanent: " + e.getMessage());
        assertTrue(e.getMessage().contains(expectedFragment),
                "message should mention '" + expectedFragment + "': " + e.getMessage());
        return e;
    }

    private void assertStateUnchanged() {
        assertEquals(1, provider.read("i1").size(), "history intact");
        assertEquals(1, admin.getQueueDepths().orchestratorQueue(), "the queued event is still there and unlocked");
    }

    @Test
    void unknown_lock_token_is_rejected_and_changes_nothing() {
        createInstanceWithPendingEvent();
        permanent(() -> provider.ackOrchestrationItem("lock_made_up", 1, List.of(Events.externalEvent(2, "x", "1")),
                List.of(), List.of(), ExecutionMetadata.empty(), List.of()), "Invalid lock token");
        permanent(() -> provider.abandonOrchestrationItem("lock_made_up", null, false), "Invalid lock token");
        permanent(() -> provider.renewOrchestrationItemLock("lock_made_up", LOCK), "Invalid lock token");
        permanent(() -> provider.ackWorkItem("lock_made_up", null), "Invalid lock token");
        permanent(() -> provider.abandonWorkItem("lock_made_up", null, false), "Invalid lock token");
        assertStateUnchanged();
    }

    @Test
    void expired_lock_token_is_rejected_saying_it_expired() throws InterruptedException {
        createInstanceWithPendingEvent();
        FetchedOrchestration f = provider.fetchOrchestrationItem(Duration.ofMillis(200), Duration.ZERO, null)
                .orElseThrow();
        Thread.sleep(300); // the subject is lease expiry: wait it out
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.externalEvent(2, "x", "1")),
                List.of(), List.of(), ExecutionMetadata.empty(), List.of()), "expired");
        assertStateUnchanged();
    }

    @Test
    void double_ack_is_rejected_the_second_time() {
        createInstanceWithPendingEvent();
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        List<Event> delta = List.of(Events.externalEvent(2, "poke", "\"data\""));
        provider.ackOrchestrationItem(f.lockToken(), 1, delta, List.of(), List.of(), ExecutionMetadata.empty(),
                List.of());
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.externalEvent(3, "x", "1")),
                List.of(), List.of(), ExecutionMetadata.empty(), List.of()), "Invalid lock token");
        assertEquals(2, provider.read("i1").size(), "only the first ack landed");

        provider.enqueueForWorker(new WorkItem.ActivityExecute("i1", 1, 7, "Act", "{}"));
        FetchedWorkItem w = provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
        provider.ackWorkItem(w.lockToken(), new WorkItem.ActivityCompleted("i1", 1, 7, "\"ok\""));
        permanent(() -> provider.ackWorkItem(w.lockToken(), new WorkItem.ActivityCompleted("i1", 1, 7, "\"again\"")),
                "not found");
        assertEquals(1, admin.getQueueDepths().orchestratorQueue(), "exactly one completion was enqueued");
    }

    @Test
    void work_items_on_the_wrong_queue_are_rejected() {
        createInstanceWithPendingEvent();
        permanent(() -> provider.enqueueForOrchestrator(new WorkItem.ActivityExecute("i1", 1, 1, "Act", "{}"), null),
                "worker queue");
        permanent(() -> provider.enqueueForWorker(new WorkItem.ExternalRaised("i1", "e", "1")), "orchestrator queue");
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(), List.of(),
                List.of(new WorkItem.ActivityExecute("i1", 1, 1, "Act", "{}")), ExecutionMetadata.empty(), List.of()),
                "worker queue");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(),
                List.of(new WorkItem.TimerFired("i1", 1, 1, 0)), List.of(), ExecutionMetadata.empty(), List.of()),
                "only ActivityExecute");
        // The rejected acks left the turn locked and intact: it can still be committed.
        provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.externalEvent(2, "poke", "\"data\"")),
                List.of(), List.of(), ExecutionMetadata.empty(), List.of());
        assertEquals(2, provider.read("i1").size());
        assertEquals(0, admin.getQueueDepths().workerQueue(), "nothing reached the worker queue");
    }

    @Test
    void hostile_schema_names_are_refused_before_any_sql() {
        for (String name : List.of("a\"b", "x; DROP SCHEMA public CASCADE", "x".repeat(100), "", "pg_catalog",
                "1abc", "sch ema", "emoji😀")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> TestDatabase.config(name).build(), name);
            assertTrue(e.getMessage().contains("schema name"), e.getMessage());
        }
    }

    @Test
    void urls_the_driver_cannot_read_are_refused_at_build_naming_the_setting() {
        for (String url : List.of("jdbc:postgresql://127.0.0.1:54x32/test", "jdbc:postgresql://h:99999999999/db")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> PostgresProviderConfig.builder().jdbcUrl(url).build(), url);
            assertTrue(e.getMessage().startsWith("jdbcUrl is not a URL the PostgreSQL driver can read"), e.getMessage());
            IllegalArgumentException l = assertThrows(IllegalArgumentException.class,
                    () -> PostgresProviderConfig.builder().jdbcUrl(TestDatabase.url()).longPolling(true)
                            .listenerUrl(url).build(), url);
            assertTrue(l.getMessage().startsWith("listenerUrl is not a URL the PostgreSQL driver can read"),
                    l.getMessage());
        }
    }

    @Test
    void null_and_oversized_payloads_are_rejected_and_nothing_is_stored() {
        createInstanceWithPendingEvent();
        permanent(() -> provider.enqueueForOrchestrator(null, null), "item is null");
        permanent(() -> provider.enqueueForWorker(null), "item is null");
        String tenMegabytes = "x".repeat(10 * 1024 * 1024);
        permanent(() -> provider.enqueueForOrchestrator(
                new WorkItem.ExternalRaised("i1", "big", tenMegabytes), null), "limit");
        permanent(() -> provider.enqueueForWorker(new WorkItem.ActivityExecute("i1", 1, 1, "Act", tenMegabytes)),
                "limit");

        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, null, List.of(), List.of(),
                ExecutionMetadata.empty(), List.of()), "historyDelta is null");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, Collections.singletonList(null), List.of(),
                List.of(), ExecutionMetadata.empty(), List.of()), "event #0 is null");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1,
                List.of(Events.externalEvent(2, "big", tenMegabytes)), List.of(), List.of(),
                ExecutionMetadata.empty(), List.of()), "limit");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(new Event(2, "Raw", "not json")),
                List.of(), List.of(), ExecutionMetadata.empty(), List.of()), "not a JSON object");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(Events.externalEvent(0, "x", "1")),
                List.of(), List.of(), ExecutionMetadata.empty(), List.of()), "event ids start at 1");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(), List.of(), List.of(),
                ExecutionMetadata.empty().withStatus("Finished", "x"), List.of()), "not one of");
        permanent(() -> provider.ackOrchestrationItem(f.lockToken(), 1, List.of(), List.of(), List.of(),
                ExecutionMetadata.empty().withStatus("Completed", tenMegabytes), List.of()), "limit");
        provider.abandonOrchestrationItem(f.lockToken(), null, true);

        assertStateUnchanged();
        assertEquals(0, admin.getQueueDepths().workerQueue());
    }

    @Test
    void bad_durations_are_rejected() {
        permanent(() -> provider.fetchOrchestrationItem(Duration.ZERO, Duration.ZERO, null), "lockTimeout");
        permanent(() -> provider.fetchWorkItem(Duration.ofSeconds(-1), Duration.ZERO, null, TagFilter.any()),
                "lockTimeout");
        permanent(() -> provider.abandonWorkItem("lock_x", Duration.ofSeconds(-5), false), "negative");
        permanent(() -> provider.renewWorkItemLock("lock_x", Duration.ZERO), "extendFor");
    }

    @Test
    void special_characters_round_trip_byte_for_byte() {
        String nasty = "quote\" backslash\\ newline\n tab\t nul\u0000 unicode é😀 json {\"a\":[1,2]}";
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("i'; DROP TABLE x;--", "Orch", nasty, null),
                null);
        FetchedOrchestration f = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        WorkItem.StartOrchestration start = (WorkItem.StartOrchestration) f.item().messages().get(0);
        assertEquals(nasty, start.input());
        assertEquals("i'; DROP TABLE x;--", f.item().instance());
        assertEquals(Arrays.asList("unknown"), List.of(f.item().version()));
    }
}
