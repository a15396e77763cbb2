package io.pgdurable.postgres.longpoll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.longpoll.WakeSource;
import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The schema's notify triggers: installed disabled, switched by activation, skipped for a provider's
 * announced writes, firing inside every other writer's transaction. A raw LISTEN connection plays the other process
 * where payloads are counted.
 */
class NotifyTriggersTest {
    private static final Duration LOCK = Duration.ofSeconds(30);
    /** Long enough that neither the fallback probe nor a recovery scan can be what woke a fetch in these tests. */
    private static final UnaryOperator<PostgresProviderConfig.Builder> NO_PROBE = b -> b
            .fallbackPollInterval(Duration.ofSeconds(60)).recoveryScanInterval(Duration.ofSeconds(60));

    private static SchemaMigrator migrator(PostgresProviderConfig config) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(TestDatabase.url());
        return new SchemaMigrator(ds, config);
    }

    @Test
    void migrate_installs_the_triggers_disabled_and_activation_switches_them() {
        String schema = TestDatabase.newSchemaName("trg_switch");
        PostgresProviderConfig config = TestDatabase.config(schema).build();
        try (PostgresProvider ignored = PostgresProvider.create(config)) {
            SchemaMigrator m = migrator(config);
            assertEquals(new SchemaMigrator.NotifyTriggers(0, 9), m.notifyTriggers());
            assertFalse(m.activated());

            m.activate();
            assertEquals(new SchemaMigrator.NotifyTriggers(9, 9), m.notifyTriggers());
            assertTrue(m.activated() && m.fullyActivated());
            m.activate(); // idempotent
            assertEquals(new SchemaMigrator.NotifyTriggers(9, 9), m.notifyTriggers());

            m.deactivate();
            assertEquals(new SchemaMigrator.NotifyTriggers(0, 9), m.notifyTriggers());
            assertFalse(m.activated());
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void a_long_polling_apply_all_provider_activates_and_verify_only_changes_nothing() throws SQLException {
        String schema = TestDatabase.newSchemaName("trg_policy");
        PostgresProviderConfig config = TestDatabase.config(schema).longPolling(true).build();
        try {
            try (PostgresProvider ignored = PostgresProvider.create(config)) {
                assertEquals(new SchemaMigrator.NotifyTriggers(9, 9), migrator(config).notifyTriggers());
            }
            // Activated, but someone disabled the triggers by hand: VERIFY_ONLY starts (with a warning) and runs no DDL.
            sql("SELECT " + Identifiers.quote(schema) + ".set_notify_triggers(false)");
            try (PostgresProvider ignored = PostgresProvider.create(config.toBuilder()
                    .migrationPolicy(MigrationPolicy.VERIFY_ONLY).build())) {
                assertEquals(new SchemaMigrator.NotifyTriggers(0, 9), migrator(config).notifyTriggers());
            }
            // APPLY_ALL with long polling mends it.
            try (PostgresProvider ignored = PostgresProvider.create(config)) {
                assertEquals(new SchemaMigrator.NotifyTriggers(9, 9), migrator(config).notifyTriggers());
            }
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void activation_waits_for_a_running_writer_in_bounded_attempts_and_holds_other_writers_back_only_briefly()
            throws Exception {
        String schema = TestDatabase.newSchemaName("trg_lock");
        PostgresProviderConfig config = TestDatabase.config(schema).migrationLockTimeout(Duration.ofMillis(100))
                .migrationLockBudget(Duration.ofSeconds(20)).build();
        try (PostgresProvider ignored = PostgresProvider.create(config);
             Connection writer = TestDatabase.connect();
             Connection other = TestDatabase.connect()) {
            String s = Identifiers.quote(schema);
            writer.setAutoCommit(false);
            try (Statement st = writer.createStatement()) {
                st.execute("SELECT " + s + ".enqueue_worker_item('{}', 0, 'w', 1, 1, NULL, NULL)"); // holds the table
            }
            SchemaMigrator m = migrator(config);
            BackgroundFetch<Boolean> activation = BackgroundFetch.start("activate", () -> {
                m.activate();
                return Optional.of(true);
            });
            // While the writer runs, activation keeps giving up and retrying; other writers get through between tries.
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                try (Statement st = other.createStatement()) {
                    st.execute("SELECT " + s + ".enqueue_orchestrator_item('o', 'ExternalRaised', '{}', 0, 0)");
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < 1_000, "another writer was held back " + ms + " ms (each attempt gives up at 100 ms)");
                assertFalse(activation.isDone(), "activation cannot finish while the writer holds worker_queue");
            }
            writer.commit();
            assertEquals(Optional.of(true), activation.get(Duration.ofSeconds(15)));
            assertEquals(new SchemaMigrator.NotifyTriggers(9, 9), m.notifyTriggers());
            assertTrue(m.activated());
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void activation_that_cannot_get_the_tables_within_its_budget_fails_retryably_and_changes_nothing()
            throws Exception {
        String schema = TestDatabase.newSchemaName("trg_budget");
        PostgresProviderConfig config = TestDatabase.config(schema).migrationLockTimeout(Duration.ofMillis(100))
                .migrationLockBudget(Duration.ofSeconds(1)).build();
        try (PostgresProvider ignored = PostgresProvider.create(config);
             Connection writer = TestDatabase.connect()) {
            writer.setAutoCommit(false);
            try (Statement st = writer.createStatement()) {
                st.execute("SELECT " + Identifiers.quote(schema)
                        + ".enqueue_worker_item('{}', 0, 'w', 1, 1, NULL, NULL)");
            }
            SchemaMigrator m = migrator(config);
            io.pgdurable.spi.ProviderException e = org.junit.jupiter.api.Assertions.assertThrows(
                    io.pgdurable.spi.ProviderException.class, m::activate);
            assertTrue(e.retryable(), e.toString());
            assertEquals(Optional.of("55P03"), e.sqlState(), e.toString());
            writer.rollback();
            assertEquals(new SchemaMigrator.NotifyTriggers(0, 9), m.notifyTriggers(), "rolled back whole");
            assertFalse(m.activated());
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void a_plain_sql_enqueue_wakes_a_parked_fetch_by_notification() throws Exception {
        try (LongPollHarness h = LongPollHarness.open("trg_plain", NO_PROBE)) {
            String s = Identifiers.quote(h.schema);
            int seen = h.signals.notificationCount();
            BackgroundFetch<FetchedWorkItem> worker = h.parkWorker("worker", Duration.ofSeconds(30));
            try (Connection c = TestDatabase.connect();
                 PreparedStatement ps = c.prepareStatement("SELECT " + s
                         + ".enqueue_worker_item(?, ?, 'plain', 1, 7, NULL, NULL)")) {
                ps.setString(1, new WorkItem.ActivityExecute("plain", 1, 7, "A", "{}").toJson());
                ps.setLong(2, System.currentTimeMillis());
                ps.execute();
            }
            long committed = System.nanoTime();
            Optional<FetchedWorkItem> got = worker.get(Duration.ofSeconds(10));
            assertTrue(got.isPresent(), "woken and claimed: " + h.signals);
            assertEquals(7, ((WorkItem.ActivityExecute) got.get().item()).id());
            assertTrue(worker.endNanos() - committed < TimeUnit.SECONDS.toNanos(5),
                    "found long before any probe: " + worker.describe());
            assertEquals(0, h.signals.fallbackPolls(), "the fallback probe never ran");
            List<String> payloads = h.signals.notificationsSince(seen);
            assertTrue(payloads.stream().anyMatch(p -> p.startsWith("w|") && Hint.origin(p) == null),
                    "the trigger's notification (no origin) woke it: " + payloads);

            seen = h.signals.notificationCount();
            BackgroundFetch<FetchedOrchestration> orchestrator = h.parkOrchestrator("orch", Duration.ofSeconds(30));
            try (Connection c = TestDatabase.connect();
                 PreparedStatement ps = c.prepareStatement("SELECT " + s
                         + ".enqueue_orchestrator_item('plain-o', 'StartOrchestration', ?, ?, ?)")) {
                long now = System.currentTimeMillis();
                ps.setString(1, LongPollHarness.start("plain-o").toJson());
                ps.setLong(2, now);
                ps.setLong(3, now);
                ps.execute();
            }
            Optional<FetchedOrchestration> turn = orchestrator.get(Duration.ofSeconds(10));
            assertTrue(turn.isPresent(), "woken and claimed: " + h.signals);
            assertEquals("plain-o", turn.get().item().instance());
            assertEquals(0, h.signals.fallbackPolls(), "the fallback probe never ran");
            assertTrue(h.signals.notificationsSince(seen).stream()
                    .anyMatch(p -> p.startsWith("o|") && Hint.origin(p) == null), h.signals.notificationsSince(seen)
                    .toString());
        }
    }

    /** Everything a provider writes, once each: enqueues, claims, renewals, abandons, acks, batches, sessions. */
    private static void exerciseEveryWrite(PostgresProvider p) {
        p.enqueueForOrchestrator(new WorkItem.StartOrchestration("ev", "O", "{}", "1.0.0"), null);
        FetchedOrchestration turn = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        p.renewOrchestrationItemLock(turn.lockToken(), LOCK);
        p.enqueueForOrchestrator(new WorkItem.ExternalRaised("ev", "during", "{}"), null);
        p.ackOrchestrationItem(turn.lockToken(), 1, List.of(Events.orchestrationStarted(1, "O", "1.0.0", "{}")),
                List.of(new WorkItem.ActivityExecute("ev", 1, 2, "A", "{}", "s1", null),
                        new WorkItem.ActivityExecute("ev", 1, 3, "A", "{}", null, "gpu")),
                List.of(new WorkItem.TimerFired("ev", 1, 4, System.currentTimeMillis() + 60_000),
                        new WorkItem.ExternalRaised("other", "hello", "{}")),
                ExecutionMetadata.of("O", "1.0.0"), List.of());
        FetchedWorkItem session = p.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", LOCK),
                TagFilter.defaultOnly()).orElseThrow();
        p.renewWorkItemLock(session.lockToken(), LOCK);
        p.renewSessionLock(List.of("owner"), LOCK, LOCK);
        p.abandonWorkItem(session.lockToken(), null, false);
        session = p.fetchWorkItem(LOCK, Duration.ZERO, new SessionFetchConfig("owner", LOCK),
                TagFilter.defaultOnly()).orElseThrow();
        p.ackWorkItem(session.lockToken(), new WorkItem.ActivityCompleted("ev", 1, 2, "\"ok\""));
        FetchedOrchestration next = p.fetchOrchestrationItem(LOCK, Duration.ZERO, null).orElseThrow();
        p.abandonOrchestrationItem(next.lockToken(), Duration.ofMillis(50), false);
        p.enqueueAllForWorker(List.of(new WorkItem.ActivityExecute("ev", 1, 10, "A", "{}"),
                new WorkItem.ActivityExecute("ev", 1, 11, "A", "{}")));
        p.enqueueAllForOrchestrator(List.of(new WorkItem.ExternalRaised("ev", "a", "{}"),
                new WorkItem.ExternalRaised("gone", "b", "{}")), null);
        List<FetchedWorkItem> batch = p.fetchWorkItems(LOCK, new WorkBatch(10, 1, Duration.ZERO), null,
                TagFilter.any());
        assertFalse(batch.isEmpty());
        for (FetchedWorkItem w : batch) {
            p.ackWorkItem(w.lockToken(), null); // batched (ackBatchSize 2): ack_work_items
        }
        p.asManagementCapability().orElseThrow().deleteInstancesAtomic(List.of("gone"), true);
    }

    @Test
    void a_providers_own_writes_send_no_trigger_notification_by_default() throws SQLException {
        try (LongPollHarness h = LongPollHarness.open("trg_own", b -> b.ackBatchSize(2));
             Connection listener = listen(h.schema)) {
            exerciseEveryWrite(h.provider);
            List<String> payloads = drain(listener, 1);
            assertFalse(payloads.isEmpty(), "the announcer told the others");
            for (String p : payloads) {
                assertNotNull(Hint.origin(p), "only announcements (with an origin), no trigger payload: " + payloads);
            }

            // Control: the triggers are on, and fire for a writer that is not a provider.
            try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
                st.execute("SELECT " + Identifiers.quote(h.schema) + ".enqueue_orchestrator_item('x', "
                        + "'ExternalRaised', '{}', 0, 0)");
            }
            List<String> plain = drain(listener, 1).stream().filter(p -> Hint.origin(p) == null).toList();
            assertEquals(List.of("o|0|1"), plain, "one NOTIFY, no origin, from the plain writer's transaction");
        }
    }

    @Test
    void a_statement_announces_every_due_instance_once_or_its_earliest_future_time() throws SQLException {
        String schema = TestDatabase.newSchemaName("trg_count");
        PostgresProviderConfig config = TestDatabase.config(schema).longPolling(true).build();
        try (PostgresProvider ignored = PostgresProvider.create(config);
             Connection listener = listen(schema);
             Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT " + Identifiers.quote(schema)
                     + ".enqueue_orchestrator_items(?, ?, ?, ?, 0)")) {
            long now = System.currentTimeMillis();
            insertMessages(c, ps, List.of("a", "b", "b", "c"), List.of(now - 10, now - 5, now - 7, now + 60_000));
            assertEquals(List.of("o|" + (now - 5) + "|2"), originless(drain(listener, 1)),
                    "the two due instances at the latest due time; the future one waits for a scan or the probe");
            insertMessages(c, ps, List.of("d", "e", "f"), List.of(now + 70_000, now + 80_000, now + 70_000));
            assertEquals(List.of("o|" + (now + 70_000) + "|2"), originless(drain(listener, 1)),
                    "nothing due: the earliest future time and its instances");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    private static void insertMessages(Connection c, PreparedStatement ps, List<String> instances, List<Long> at)
            throws SQLException {
        String[] items = new String[instances.size()];
        String[] kinds = new String[instances.size()];
        for (int i = 0; i < items.length; i++) {
            items[i] = new WorkItem.ExternalRaised(instances.get(i), "e", "{}").toJson();
            kinds[i] = "ExternalRaised";
        }
        ps.setArray(1, c.createArrayOf("text", instances.toArray()));
        ps.setArray(2, c.createArrayOf("text", kinds));
        ps.setArray(3, c.createArrayOf("text", items));
        ps.setArray(4, c.createArrayOf("bigint", at.toArray()));
        ps.execute();
    }

    private static List<String> originless(List<String> payloads) {
        return payloads.stream().filter(p -> Hint.origin(p) == null).toList();
    }

    /**
     * An idle provider's write carries its notification in its own statement, so it commits with the data: a writer
     * that dies right after its commit has still told the other processes, with no fallback probe involved.
     */
    @Test
    void an_idle_writer_halted_right_after_its_commit_still_wakes_the_waiter() throws Exception {
        try (LongPollHarness h = LongPollHarness.open("trg_halt", NO_PROBE)) {
            int seen = h.signals.notificationCount();
            int wakesBefore = h.signals.wakeSourcesSince(0).size();
            BackgroundFetch<FetchedWorkItem> worker = h.parkWorker("worker", Duration.ofSeconds(60));
            String output = runHaltingWriter(h.schema, "halted", false);
            assertTrue(output.contains("committed"), output);
            Optional<FetchedWorkItem> got = worker.get(Duration.ofSeconds(20));
            assertTrue(got.isPresent(), "woken: " + h.signals);
            assertEquals("halted", ((WorkItem.ActivityExecute) got.get().item()).instance());
            assertEquals(0, h.signals.fallbackPolls(), "not the fallback probe");
            List<String> payloads = h.signals.notificationsSince(seen);
            assertTrue(payloads.stream().anyMatch(p -> p.startsWith("w|") && p.contains("|1|1||0|")),
                    "the writer's notification: " + payloads);
            // A scan may also run meanwhile (a slow child JVM can outlast the periodic recovery scan's interval);
            // what matters is that the notification woke the fetch first.
            List<WakeSource> sources = h.signals.wakeSourcesSince(wakesBefore);
            assertFalse(sources.isEmpty(), "a wake was reported");
            assertEquals(WakeSource.NOTIFICATION, sources.get(0), "woken by the writer's notification: " + sources);
        }
    }

    @Test
    void an_item_handed_over_by_a_writer_halted_right_after_its_commit_reaches_the_waiter() throws Exception {
        try (LongPollHarness h = LongPollHarness.open("trg_halt_ho", NO_PROBE)) {
            int wakesBefore = h.signals.wakeSourcesSince(0).size();
            BackgroundFetch<FetchedWorkItem> worker = h.parkWorker("worker", Duration.ofSeconds(60));
            h.signals.await(() -> h.signals.lastTakersRegistered() == 1, Duration.ofSeconds(10),
                    "the parked fetch written as a taker");
            String output = runHaltingWriter(h.schema, "halted-ho", true);
            assertTrue(output.contains("committed"), output);
            Optional<FetchedWorkItem> got = worker.get(Duration.ofSeconds(20));
            assertTrue(got.isPresent(), "handed over: " + h.signals);
            assertEquals("halted-ho", ((WorkItem.ActivityExecute) got.get().item()).instance());
            assertEquals(WakeSource.HANDOVER, h.signals.wakeSourcesSince(wakesBefore).get(0),
                    "the item travelled in the writer's own commit");
            h.signals.await(() -> h.signals.handOffsHeld() == 1, Duration.ofSeconds(10), "held by the taker");
        }
    }

    /** Runs {@link HaltingWriter} in a JVM of its own on the test classpath and returns what it printed. */
    private static String runHaltingWriter(String schema, String instance, boolean handOver) throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Process process = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                System.getProperty("java.class.path"), HaltingWriter.class.getName(), TestDatabase.url(), schema,
                instance, String.valueOf(handOver))
                .redirectErrorStream(true)
                .start();
        process.getOutputStream().close();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the writer process did not end within 60 s");
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, process.exitValue(), output);
        return output;
    }

    private static Connection listen(String schema) throws SQLException {
        Connection c = TestDatabase.connect();
        TestDatabase.listenAsAnotherProcess(c, schema);
        return c;
    }

    /** Payloads received: waits for the first {@code atLeast}, then until 300 ms pass without one. */
    private static List<String> drain(Connection listener, int atLeast) throws SQLException {
        PGConnection pg = listener.unwrap(PGConnection.class);
        List<String> payloads = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (payloads.size() < atLeast && System.nanoTime() < deadline) {
            add(pg.getNotifications(100), payloads);
        }
        PGNotification[] more;
        while ((more = pg.getNotifications(300)) != null && more.length > 0 && System.nanoTime() < deadline) {
            add(more, payloads);
        }
        return payloads;
    }

    private static void add(PGNotification[] batch, List<String> into) {
        if (batch != null) {
            for (PGNotification n : batch) {
                into.add(n.getParameter());
            }
        }
    }

    private static void sql(String statement) throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute(statement);
        }
    }
}
