package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.longpoll.NotifyChannel;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/** The notify triggers: installed disabled, activated schema-wide, one deduplicated hint per statement. */
class NotifyTriggersTest {
    private static final Duration LOCK = Duration.ofSeconds(30);
    private String schema;
    private PostgresProvider provider;
    private SchemaMigrator migrator;
    private Connection listener;

    @BeforeEach
    void start() throws SQLException {
        schema = TestDatabase.newSchemaName("notify");
        PostgresProviderConfig config = TestDatabase.config(schema).build();
        provider = PostgresProvider.create(config);
        migrator = new SchemaMigrator(new org.postgresql.ds.PGSimpleDataSource() {
            {
                setURL(TestDatabase.url());
            }
        }, config);
        listener = TestDatabase.connect();
        try (Statement st = listener.createStatement()) {
            st.execute("LISTEN " + NotifyChannel.quoted(NotifyChannel.forSchema(schema)));
        }
    }

    @AfterEach
    void stop() throws SQLException {
        listener.close();
        provider.close();
        TestDatabase.dropSchema(schema);
    }

    /** Notifications delivered so far (they arrive at commit; a short wait covers delivery). */
    private List<String> drain() throws SQLException {
        List<String> payloads = new ArrayList<>();
        PGNotification[] batch = listener.unwrap(PGConnection.class).getNotifications(200);
        while (batch != null && batch.length > 0) {
            for (PGNotification n : batch) {
                payloads.add(n.getParameter());
            }
            batch = listener.unwrap(PGConnection.class).getNotifications(50);
        }
        return payloads;
    }

    @Test
    void triggers_are_installed_disabled_and_notify_nothing_until_activated() throws SQLException {
        assertFalse(migrator.activated());
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("i", "O", "{}", "1.0.0"), null);
        provider.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 1, "A", "{}"));
        assertEquals(List.of(), drain());
        migrator.activate();
        assertTrue(migrator.activated());
        provider.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 2, "A", "{}"));
        assertEquals(1, drain().size());
        migrator.deactivate();
        assertFalse(migrator.activated());
    }

    @Test
    void every_claimable_change_sends_one_hint_and_empty_fetches_send_none() throws SQLException {
        migrator.activate();
        assertTrue(provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).isEmpty());
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).isEmpty());
        assertEquals(List.of(), drain(), "empty fetches notify nothing");

        long before = System.currentTimeMillis();
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("i", "O", "{}", "1.0.0"), null);
        List<String> hints = drain();
        assertEquals(1, hints.size(), hints.toString());
        String[] f = hints.get(0).split("\\|");
        assertEquals("o", f[0]);
        assertTrue(Long.parseLong(f[1]) >= before - 5 && Long.parseLong(f[1]) <= System.currentTimeMillis() + 5);
        assertEquals("1", f[2]);

        FetchedOrchestration turn = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        hints = drain();
        assertEquals(1, hints.size(), "the claim announces when its lease ends: " + hints);
        assertTrue(hints.get(0).startsWith("o|") && hints.get(0).endsWith("|0"), hints.toString());
        assertTrue(Long.parseLong(hints.get(0).split("\\|")[1]) >= before + LOCK.toMillis());

        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("i", "late", "1"), null);
        drain();
        provider.ackOrchestrationItem(turn.lockToken(), 1, List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")),
                List.of(new WorkItem.ActivityExecute("i", 1, 2, "A", "{}", null, "gpu"),
                        new WorkItem.ActivityExecute("i", 1, 3, "A", "{}", "s1", null),
                        new WorkItem.ActivityExecute("i", 1, 4, "A", "{}", null, "gpu")),
                List.of(), ExecutionMetadata.of("O", "1.0.0"), List.of());
        hints = drain();
        assertTrue(hints.contains("w|" + hints.stream().filter(h -> h.startsWith("w|")).findFirst().orElseThrow()
                .split("\\|")[1] + "|3|1|gpu|1"), "one worker hint for three items: untagged, gpu, session: " + hints);
        assertEquals(1, hints.stream().filter(h -> h.startsWith("w|")).count(), hints.toString());
        assertTrue(hints.stream().anyMatch(h -> h.startsWith("o|") && h.endsWith("|1")),
                "the released lease announces the late message: " + hints);

        FetchedWorkItem w = provider.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", LOCK),
                TagFilter.any()).orElseThrow();
        hints = drain();
        assertTrue(hints.stream().anyMatch(h -> h.startsWith("w|") && h.split("\\|")[2].equals("0")),
                "the claim announces its lease end: " + hints);
        provider.abandonWorkItem(w.lockToken(), Duration.ofSeconds(5), false);
        hints = drain();
        assertEquals(1, hints.size(), hints.toString());
        assertTrue(Long.parseLong(hints.get(0).split("\\|")[1]) >= System.currentTimeMillis() + 4_000,
                "a delayed abandon announces its visibility time: " + hints);
    }

    @Test
    void session_leases_announce_their_end() throws SQLException {
        migrator.activate();
        provider.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 1, "A", "{}", "s1", null));
        drain();
        long before = System.currentTimeMillis();
        provider.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", Duration.ofSeconds(7)),
                TagFilter.defaultOnly()).orElseThrow();
        List<String> hints = drain();
        String session = hints.stream().filter(h -> h.startsWith("s|")).findFirst().orElseThrow();
        long at = Long.parseLong(session.split("\\|")[1]);
        assertTrue(at >= before + 7_000 && at <= System.currentTimeMillis() + 7_000, session);
    }
}
