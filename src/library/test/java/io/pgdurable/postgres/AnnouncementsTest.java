package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.internal.longpoll.Announcer;
import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.longpoll.LongPollSignals;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * What providers announce after their commits: nothing until the schema is activated, then one hint per claimable
 * change, each naming its origin; nothing for empty fetches. A raw LISTEN connection plays the other process.
 */
class AnnouncementsTest {
    private static final Duration LOCK = Duration.ofSeconds(30);
    private String schema;
    private PostgresProviderConfig config;
    private SchemaMigrator migrator;
    private Connection listener;
    private final List<PostgresProvider> providers = new ArrayList<>();

    @BeforeEach
    void start() throws SQLException {
        schema = TestDatabase.newSchemaName("announce");
        config = TestDatabase.config(schema).build();
        providers.add(PostgresProvider.create(config)); // migrates; the schema is not activated
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(TestDatabase.url());
        migrator = new SchemaMigrator(ds, config);
        listener = TestDatabase.connect();
        try (Statement st = listener.createStatement()) {
            st.execute("LISTEN " + NotifyChannel.quoted(NotifyChannel.forSchema(schema)));
        }
    }

    @AfterEach
    void stop() throws SQLException {
        listener.close();
        providers.forEach(PostgresProvider::close);
        TestDatabase.dropSchema(schema);
    }

    private PostgresProvider activatedProvider() {
        migrator.activate();
        PostgresProvider p = PostgresProvider.create(config);
        providers.add(p);
        return p;
    }

    /**
     * Announcements received so far, without their origin field. They are sent after the commit from a background
     * thread, so the first wait is generous and the rest only drains what is already there.
     */
    private List<String> drain(int expectedAtLeast) throws SQLException {
        List<String> payloads = new ArrayList<>();
        PGConnection pg = listener.unwrap(PGConnection.class);
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (payloads.size() < expectedAtLeast && System.nanoTime() < deadline) {
            collect(pg.getNotifications(100), payloads);
        }
        // then until 100 ms pass without any: under load the announcer spaces its sends a few ms apart
        PGNotification[] more;
        while ((more = pg.getNotifications(100)) != null && more.length > 0 && System.nanoTime() < deadline) {
            collect(more, payloads);
        }
        return payloads;
    }

    private static void collect(PGNotification[] batch, List<String> into) {
        if (batch == null) {
            return;
        }
        for (PGNotification n : batch) {
            String payload = n.getParameter();
            String origin = Hint.origin(payload);
            assertNotNull(origin, "every announcement names its origin: " + payload);
            into.add(payload.substring(0, payload.length() - origin.length() - 1));
        }
    }

    @Test
    void nothing_is_announced_until_the_schema_is_activated() throws SQLException {
        assertFalse(migrator.activated());
        PostgresProvider before = providers.get(0);
        before.enqueueForOrchestrator(new WorkItem.StartOrchestration("i", "O", "{}", "1.0.0"), null);
        before.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 1, "A", "{}"));
        assertEquals(List.of(), drain(0));

        PostgresProvider after = activatedProvider();
        assertTrue(migrator.activated());
        after.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 2, "A", "{}"));
        List<String> hints = drain(1);
        assertEquals(1, hints.size(), hints.toString());
        assertTrue(hints.get(0).startsWith("w|") && hints.get(0).endsWith("|1|1||0"), hints.toString());

        migrator.deactivate();
        assertFalse(migrator.activated());
        try (PostgresProvider deactivated = PostgresProvider.create(config)) {
            deactivated.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 3, "A", "{}"));
            assertEquals(List.of(), drain(0), "a provider started on a deactivated schema announces nothing");
        }
    }

    @Test
    void every_claimable_change_is_announced_once_and_empty_fetches_announce_nothing() throws SQLException {
        PostgresProvider provider = activatedProvider();
        assertTrue(provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).isEmpty());
        assertTrue(provider.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).isEmpty());
        assertEquals(List.of(), drain(0), "empty fetches announce nothing");

        long before = System.currentTimeMillis();
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("i", "O", "{}", "1.0.0"), null);
        List<String> hints = drain(1);
        assertEquals(1, hints.size(), hints.toString());
        String[] f = hints.get(0).split("\\|");
        assertEquals("o", f[0]);
        assertTrue(Long.parseLong(f[1]) >= before - 5 && Long.parseLong(f[1]) <= System.currentTimeMillis() + 5);
        assertEquals("1", f[2]);

        FetchedOrchestration turn = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        hints = drain(1);
        assertEquals(1, hints.size(), "the claim announces when its lease ends: " + hints);
        assertTrue(hints.get(0).startsWith("o|") && hints.get(0).endsWith("|0"), hints.toString());
        assertTrue(Long.parseLong(hints.get(0).split("\\|")[1]) >= before + LOCK.toMillis());

        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("i", "late", "1"), null);
        assertEquals(1, drain(1).size());
        provider.ackOrchestrationItem(turn.lockToken(), 1, List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")),
                List.of(new WorkItem.ActivityExecute("i", 1, 2, "A", "{}", null, "gpu"),
                        new WorkItem.ActivityExecute("i", 1, 3, "A", "{}", "s1", null),
                        new WorkItem.ActivityExecute("i", 1, 4, "A", "{}", null, "gpu")),
                List.of(), ExecutionMetadata.of("O", "1.0.0"), List.of());
        hints = drain(2);
        List<String> worker = hints.stream().filter(h -> h.startsWith("w|")).collect(Collectors.toList());
        assertEquals(1, worker.size(), "one worker hint for three items: " + hints);
        assertTrue(worker.get(0).endsWith("|3|1|gpu|1"), "untagged, gpu, session: " + hints);
        assertTrue(hints.stream().anyMatch(h -> h.startsWith("o|") && h.endsWith("|1")),
                "the released lease announces the message that arrived during the turn: " + hints);

        FetchedWorkItem w = provider.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", LOCK),
                TagFilter.any()).orElseThrow();
        hints = drain(1);
        assertTrue(hints.stream().anyMatch(h -> h.startsWith("w|") && h.split("\\|")[2].equals("0")),
                "the claim announces its lease end: " + hints);
        provider.abandonWorkItem(w.lockToken(), Duration.ofSeconds(5), false);
        hints = drain(1);
        assertEquals(1, hints.size(), hints.toString());
        assertTrue(Long.parseLong(hints.get(0).split("\\|")[1]) >= System.currentTimeMillis() + 4_000,
                "a delayed abandon announces its visibility time: " + hints);
    }

    @Test
    void an_ack_without_late_messages_announces_no_release() throws SQLException {
        PostgresProvider provider = activatedProvider();
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("j", "O", "{}", "1.0.0"), null);
        FetchedOrchestration turn = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        drain(2);
        provider.ackOrchestrationItem(turn.lockToken(), 1, List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")),
                List.of(), List.of(), ExecutionMetadata.of("O", "1.0.0"), List.of());
        assertEquals(List.of(), drain(0), "nothing became claimable");
    }

    @Test
    void delayed_messages_of_a_turn_are_announced_per_visibility_time() throws SQLException {
        PostgresProvider provider = activatedProvider();
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("k", "O", "{}", "1.0.0"), null);
        FetchedOrchestration turn = provider.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        drain(2);
        long now = System.currentTimeMillis();
        List<WorkItem> timers = new ArrayList<>();
        for (int i = 1; i <= 10; i++) {
            timers.add(new WorkItem.TimerFired("k", 1, i, now + i * 60_000L));
        }
        provider.ackOrchestrationItem(turn.lockToken(), 1, List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")),
                List.of(), timers, ExecutionMetadata.of("O", "1.0.0"), List.of());
        List<String> hints = drain(8);
        // Eight timers; the open-ended hint for the rest (count 0, at the ninth time) is not told to other processes,
        // because the turn's lease end (count 0, told at the fetch) is still ahead of it: when that comes due there,
        // the receivers' verification scan finds every future visibility time, the ninth and tenth included.
        assertEquals(8, hints.size(), "eight timers: " + hints);
        for (int i = 0; i < 8; i++) {
            String[] f = hints.get(i).split("\\|");
            assertEquals(now + (i + 1) * 60_000L, Long.parseLong(f[1]), hints.toString());
            // the first time also counts the instance itself, released with a message pending (its own timer)
            assertTrue(Integer.parseInt(f[2]) >= 1, hints.toString());
        }
    }

    @Test
    void hints_about_the_future_linger_to_share_a_transaction_and_urgent_ones_do_not() throws SQLException {
        migrator.activate();
        AtomicInteger sends = new AtomicInteger();
        PostgresProvider p = PostgresProvider.create(config.toBuilder().longPollSignals(new LongPollSignals() {
            @Override
            public void announced(int payloads) {
                sends.incrementAndGet();
            }
        }).build());
        providers.add(p);
        int items = 10;
        for (int i = 0; i < items; i++) {
            p.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, i, "A", "{}"));
        }
        drain(1);
        int before = sends.get();
        long t0 = System.nanoTime();
        List<FetchedWorkItem> claimed = new ArrayList<>();
        for (int i = 0; i < items; i++) {
            claimed.add(p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow());
        }
        long claimMillis = (System.nanoTime() - t0) / 1_000_000;
        List<String> hints = drain(1);
        assertTrue(hints.stream().allMatch(h -> h.startsWith("w|") && h.split("\\|")[2].equals("0")),
                "only lease ends: " + hints);
        awaitAtLeast(sends, before + 1);
        int transactions = sends.get() - before;
        // the claims' lease ends (30 s ahead) wait up to 100 ms for each other: one transaction per 100 ms of claiming
        assertTrue(transactions >= 1 && transactions <= 1 + claimMillis / Announcer.LINGER_MS + 1,
                transactions + " transactions for " + items + " claims in " + claimMillis + " ms: " + hints);
        assertTrue(transactions < items, "lease ends were not batched: " + transactions + " transactions");

        // an item visible now is sent without lingering
        int beforeUrgent = sends.get();
        p.abandonWorkItem(claimed.get(0).lockToken(), null, false);
        List<String> released = drain(1);
        awaitAtLeast(sends, beforeUrgent + 1);
        assertEquals(1, sends.get() - beforeUrgent, released.toString());
        assertTrue(released.stream().anyMatch(h -> h.split("\\|")[2].equals("1")), released.toString());
    }

    /** The send's signal follows its commit, so it may trail the notification by a moment. */
    private static void awaitAtLeast(AtomicInteger counter, int value) {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (counter.get() < value && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        assertTrue(counter.get() >= value, "expected at least " + value + " sends, saw " + counter.get());
    }

    @Test
    void session_leases_announce_their_end() throws SQLException {
        PostgresProvider provider = activatedProvider();
        provider.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, 1, "A", "{}", "s1", null));
        drain(1);
        long before = System.currentTimeMillis();
        provider.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", Duration.ofSeconds(7)),
                TagFilter.defaultOnly()).orElseThrow();
        List<String> hints = drain(2);
        String session = hints.stream().filter(h -> h.startsWith("w|") && h.endsWith("|0|1|*|1")
                && Long.parseLong(h.split("\\|")[1]) < before + LOCK.toMillis()).findFirst()
                .orElseThrow(() -> new AssertionError("no session lease end in " + hints));
        long at = Long.parseLong(session.split("\\|")[1]);
        assertTrue(at >= before + 7_000 && at <= System.currentTimeMillis() + 7_000, session);
    }

    /**
     * The announcer's statement sends every payload and commits asynchronously: inside its transaction
     * {@code synchronous_commit} is off, and only there (the session keeps its own setting afterwards).
     */
    @Test
    void announcements_commit_without_waiting_for_their_flush() throws SQLException {
        String channel = NotifyChannel.forSchema(schema);
        Statements sql = new Statements(schema);
        try (Connection c = TestDatabase.connect()) {
            String sessionSetting = show(c);
            c.setAutoCommit(false);
            try (java.sql.PreparedStatement ps = c.prepareStatement(sql.announce)) {
                ps.setString(1, channel);
                ps.setArray(2, c.createArrayOf("text", new Object[] {"o|1|1|aa", "o|2|1|aa"}));
                ps.execute();
            }
            assertEquals("off", show(c), "inside the announcing transaction");
            c.commit();
            assertEquals(sessionSetting, show(c), "after it: the session's own setting");
        }
        assertEquals(List.of("o|1|1", "o|2|1"), drain(2));
    }

    private static String show(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); java.sql.ResultSet rs = st.executeQuery("SHOW synchronous_commit")) {
            assertTrue(rs.next());
            return rs.getString(1);
        }
    }
}
