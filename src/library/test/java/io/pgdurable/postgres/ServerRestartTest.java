package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The server restarts under load. The test runs a PostgreSQL of its own (the embedded one) so it can stop
 * and start it while two producers and four long-polling consumers work through one provider instance. After a
 * short and a long outage (and, with the plain pgjdbc listener, a 60 s one) the same provider enqueues within a
 * second of the server's return and its listener LISTENs again, without a connection attempt storm while the server
 * is down; every error a caller saw was retryable; and a ledger shows every committed item handled, none twice
 * except where an ack failed.
 */
@Isolated("its recovery times are the subject: with the rest of the suite loading both cores, a 2-core CI machine "
        + "took over 1 s to hand out a connection; alone it recovers within 1 s")
class ServerRestartTest {
    private static final Duration LEASE = Duration.ofSeconds(3);
    private static final long RECOVERY_LIMIT_MILLIS = 1_000;
    /**
     * The goal is a second, as for the pool; the bound is ten. In CI with the test running alone the listener was
     * back 21-53 ms after the server, with helpers loading the machine (load average 13-14) 0.3-1.0 s. The two
     * slower returns seen before were the test's own doing: pgjdbc-ng's first connect in the JVM caught by the first
     * outage, and a reconnect that happened before the embedded library's start() returned, which the test only
     * looked for after it.
     */
    private static final long LISTEN_LIMIT_MILLIS = 10_000;

    /**
     * The listener's return is measured from the stop (it may be back before {@code start()} returns) and printed;
     * it must be back within {@link #LISTEN_LIMIT_MILLIS}. Meanwhile the one-second fallback probe delivers, which
     * the ledger checks (docs/decisions.md, "back within a second of the server").
     */
    @ParameterizedTest
    @EnumSource(PostgresProviderConfig.ListenerDriver.class)
    void one_provider_rides_out_server_restarts_exactly_once_and_recovers_within_a_second(
            PostgresProviderConfig.ListenerDriver driver) throws Exception {
        boolean plainDriver = driver == PostgresProviderConfig.ListenerDriver.PGJDBC;
        Path dataDir = Files.createTempDirectory("pgdurable-restart");
        EmbeddedPostgres server = start(dataDir, 0);
        int port = server.getPort();
        String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
        try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE ledger (item TEXT PRIMARY KEY)");
        }
        Signals signals = new Signals();
        Set<String> stored = new HashSet<>();
        PostgresProvider provider = PostgresProvider.create(PostgresProviderConfig.builder().jdbcUrl(url)
                .schema("restart").listenerDriver(driver).poolSize(8).connectionTimeout(Duration.ofSeconds(2)).longPolling(true)
                .longPollSignals(signals).build());
        Load load = new Load(provider, url);
        long createdAt = System.nanoTime();
        try {
            // The first LISTEN of a JVM is slow with pgjdbc-ng (driver and type catalogue warm-up: 2-3 s on a quiet
            // machine): an outage before it would measure the warm-up, not the return.
            long firstListen = signals.firstListeningAfter(createdAt, 90);
            System.out.printf("ServerRestartTest %s: first LISTEN %d ms after the provider was created%n", driver,
                    TimeUnit.NANOSECONDS.toMillis(firstListen - createdAt));
            load.start();
            load.awaitLedger(200, 30);

            // The longest outage the recovery promise covers (60 s) once, with the driver that reconnects fastest.
            long[] outages = plainDriver ? new long[] {300, 8_000, 60_000} : new long[] {300, 8_000};
            for (long outageMillis : outages) {
                server.close();
                long downAt = System.nanoTime();
                long probesBefore = provider.ownedPool().probes();
                int attemptsBefore = signals.backoffs.get();
                TimeUnit.MILLISECONDS.sleep(outageMillis);
                long probes = provider.ownedPool().probes() - probesBefore;
                int attempts = signals.backoffs.get() - attemptsBefore;
                server = start(dataDir, port);
                long upAt = System.nanoTime();
                double downSeconds = (upAt - downAt) / 1e9;

                long enqueued = load.firstEnqueueAfter(upAt, 10);
                long enqueueMillis = TimeUnit.NANOSECONDS.toMillis(enqueued - upAt);
                assertTrue(enqueueMillis >= 0 && enqueueMillis <= RECOVERY_LIMIT_MILLIS,
                        "after a " + outageMillis + " ms outage the first enqueue succeeded " + enqueueMillis
                                + " ms after the server was back");
                // From the stop on: the listener may LISTEN again before start() returns (the server accepts
                // connections while the embedded library still checks it), which counts as back at once.
                long listeningMillis = Math.max(0,
                        TimeUnit.NANOSECONDS.toMillis(signals.firstListeningAfter(downAt, 90) - upAt));
                System.out.printf("ServerRestartTest %s: after a %d ms outage: first enqueue %d ms, LISTEN %d ms "
                        + "after the server was back%n", driver, outageMillis, enqueueMillis, listeningMillis);
                assertTrue(listeningMillis <= LISTEN_LIMIT_MILLIS, "after a " + outageMillis + " ms outage the "
                        + "listener LISTENed again " + listeningMillis + " ms after the server was back; its events: "
                        + signals.timeline);
                assertTrue(probes <= 2 * downSeconds + 2, probes + " pool probes in a " + downSeconds + " s outage");
                assertTrue(attempts <= 1.6 * downSeconds + 6,
                        attempts + " listener attempts in a " + downSeconds + " s outage");
                load.awaitLedger(load.ledgerRows() + 200, 30);
            }
            load.stopProducers();
            load.awaitAllCommittedInLedger(60);
            load.stop();
            try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT item FROM ledger")) {
                while (rs.next()) {
                    stored.add(rs.getString(1));
                }
            }
        } finally {
            load.stop();
            provider.close();
            server.close();
            deleteTree(dataDir);
        }
        assertTrue(load.permanentErrors.isEmpty(), "errors callers saw that were not retryable: "
                + load.permanentErrors);
        assertTrue(load.retryableErrors.get() > 0, "the outages were seen by the callers");
        assertTrue(provider.ownedPool().renewals() >= 1, "the empty pool was renewed when the server came back");
        Set<String> ledger = stored;
        Set<String> missing = new HashSet<>(load.committed);
        missing.removeAll(ledger);
        assertEquals(Set.of(), missing, "committed items never handled");
        Set<String> unknown = new HashSet<>(ledger);
        unknown.removeAll(load.committed);
        unknown.removeAll(load.uncertain);
        assertEquals(Set.of(), unknown, "handled items that were never enqueued");
        assertTrue(load.duplicates.get() <= load.failedAcks.get() + load.failedLedgerWrites.get(),
                load.duplicates.get() + " items handled twice, but only " + load.failedAcks.get() + " acks and "
                        + load.failedLedgerWrites.get() + " ledger writes failed (a write can fail after its commit)");
    }

    private static EmbeddedPostgres start(Path dataDir, int port) throws IOException {
        EmbeddedPostgres.Builder b = EmbeddedPostgres.builder().setDataDirectory(dataDir)
                .setCleanDataDirectory(false).setServerConfig("max_connections", "100");
        if (port != 0) {
            b.setPort(port);
        }
        return b.start();
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** The listener's events: when it began listening, and how many reconnect attempts it backed off from. */
    private static final class Signals implements LongPollSignals {
        final List<Long> listeningAt = new CopyOnWriteArrayList<>();
        final AtomicInteger backoffs = new AtomicInteger();
        final List<String> timeline = new CopyOnWriteArrayList<>();

        @Override
        public void listening(boolean reconnect) {
            listeningAt.add(System.nanoTime());
            timeline.add(System.nanoTime() / 1_000_000 + " listening");
        }

        @Override
        public void connectionLost(Throwable cause) {
            timeline.add(System.nanoTime() / 1_000_000 + " lost: " + cause);
        }

        @Override
        public void backoff(int failures, Duration delay) {
            backoffs.incrementAndGet();
            timeline.add(System.nanoTime() / 1_000_000 + " backoff " + failures + " " + delay.toMillis() + " ms");
        }

        long firstListeningAfter(long since, int seconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (System.nanoTime() < deadline) {
                for (long at : listeningAt) {
                    if (at - since >= 0) {
                        return at;
                    }
                }
                TimeUnit.MILLISECONDS.sleep(5);
            }
            throw new AssertionError("the listener did not LISTEN again within " + seconds + " s; its events: "
                    + timeline + "; its threads: " + listenerThreads());
        }
    }

    /** What each pgdurable listener and notifier thread is doing, for a failure message. */
    private static String listenerThreads() {
        StringBuilder out = new StringBuilder("(" + java.lang.management.ManagementFactory.getThreadMXBean()
                .getThreadCount() + " threads in the JVM)");
        Thread.getAllStackTraces().forEach((t, stack) -> {
            if (t.getName().startsWith("pgdurable-listener") || t.getName().startsWith("pgdurable-notifier")) {
                out.append("\n").append(t.getName()).append(" (").append(t.getState()).append(")");
                for (int i = 0; i < Math.min(stack.length, 25); i++) {
                    out.append("\n    at ").append(stack[i]);
                }
            }
        });
        return out.toString();
    }

    /** Two producers and four long-polling consumers with a ledger (item primary key) in the same database. */
    private static final class Load {
        final PostgresProvider provider;
        final String url;
        final Set<String> committed = ConcurrentHashMap.newKeySet();
        final Set<String> uncertain = ConcurrentHashMap.newKeySet();
        final Set<String> ledger = ConcurrentHashMap.newKeySet();
        final List<String> permanentErrors = new CopyOnWriteArrayList<>();
        final AtomicLong retryableErrors = new AtomicLong();
        final AtomicLong duplicates = new AtomicLong();
        final AtomicLong failedAcks = new AtomicLong();
        final AtomicLong failedLedgerWrites = new AtomicLong();
        final List<Long> enqueuedAt = new CopyOnWriteArrayList<>();
        final AtomicBoolean producing = new AtomicBoolean(true);
        final AtomicBoolean consuming = new AtomicBoolean(true);
        final List<Thread> threads = new ArrayList<>();
        final List<Throwable> failures = new CopyOnWriteArrayList<>();

        Load(PostgresProvider provider, String url) {
            this.provider = provider;
            this.url = url;
        }

        void start() {
            for (int p = 0; p < 2; p++) {
                int producer = p;
                spawn("producer-" + p, () -> produce(producer));
            }
            for (int c = 0; c < 4; c++) {
                spawn("consumer-" + c, this::consume);
            }
        }

        private void spawn(String name, Runnable body) {
            Thread t = new Thread(() -> {
                try {
                    body.run();
                } catch (Throwable e) {
                    failures.add(e);
                }
            }, name);
            t.start();
            threads.add(t);
        }

        private void produce(int producer) {
            for (int i = 0; producing.get(); i++) {
                String key = producer + ":" + i;
                try {
                    provider.enqueueForWorker(new WorkItem.ActivityExecute("p" + producer, 1, i, "Restart", "{}"));
                    committed.add(key);
                    enqueuedAt.add(System.nanoTime());
                    pause(2);
                } catch (ProviderException e) {
                    uncertain.add(key); // the commit may or may not have happened
                    seen(e);
                    pause(20);
                }
            }
        }

        private void consume() {
            Connection ledgerConnection = null;
            while (consuming.get()) {
                Optional<FetchedWorkItem> got;
                try {
                    got = provider.fetchWorkItem(LEASE, Duration.ofMillis(500), null, TagFilter.defaultOnly());
                } catch (ProviderException e) {
                    seen(e);
                    pause(20);
                    continue;
                }
                if (got.isEmpty()) {
                    continue;
                }
                WorkItem.ActivityExecute item = (WorkItem.ActivityExecute) got.get().item();
                String key = item.instance().substring(1) + ":" + item.id();
                try {
                    if (ledgerConnection == null) {
                        ledgerConnection = DriverManager.getConnection(url);
                    }
                    try (PreparedStatement ps = ledgerConnection.prepareStatement(
                            "INSERT INTO ledger (item) VALUES (?) ON CONFLICT DO NOTHING")) {
                        ps.setString(1, key);
                        if (ps.executeUpdate() == 0) {
                            duplicates.incrementAndGet();
                        }
                    }
                    ledger.add(key);
                } catch (SQLException e) {
                    failedLedgerWrites.incrementAndGet();
                    closeQuietly(ledgerConnection);
                    ledgerConnection = null;
                    pause(20);
                    continue; // not acked: the lease ends and the item comes back
                }
                try {
                    provider.ackWorkItem(got.get().lockToken(), null);
                } catch (ProviderException e) {
                    failedAcks.incrementAndGet();
                    seen(e);
                }
            }
            closeQuietly(ledgerConnection);
        }

        private void seen(ProviderException e) {
            if (e.retryable()) {
                retryableErrors.incrementAndGet();
            } else {
                permanentErrors.add(e.toString());
            }
        }

        int ledgerRows() {
            return ledger.size();
        }

        void awaitLedger(int rows, int seconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (ledger.size() < rows) {
                if (System.nanoTime() > deadline || !failures.isEmpty()) {
                    throw new AssertionError("the ledger reached " + ledger.size() + " of " + rows + " rows in "
                            + seconds + " s; failures: " + failures);
                }
                TimeUnit.MILLISECONDS.sleep(20);
            }
        }

        /** The first successful enqueue at or after {@code since}. */
        long firstEnqueueAfter(long since, int seconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (System.nanoTime() < deadline) {
                for (int i = enqueuedAt.size() - 1; i >= 0; i--) {
                    long at = enqueuedAt.get(i);
                    if (at - since < 0) {
                        break;
                    }
                    if (i == 0 || enqueuedAt.get(i - 1) - since < 0) {
                        return at;
                    }
                }
                TimeUnit.MILLISECONDS.sleep(5);
            }
            throw new AssertionError("no enqueue succeeded within " + seconds + " s of the server's return");
        }

        void stopProducers() throws InterruptedException {
            producing.set(false);
            for (Thread t : threads.subList(0, 2)) {
                t.join(10_000);
            }
        }

        void awaitAllCommittedInLedger(int seconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (!ledger.containsAll(committed)) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError((committed.size() - ledger.size()) + " committed items not handled "
                            + "within " + seconds + " s");
                }
                TimeUnit.MILLISECONDS.sleep(20);
            }
        }

        void stop() throws InterruptedException {
            producing.set(false);
            consuming.set(false);
            for (Thread t : threads) {
                t.join(10_000);
            }
            assertTrue(failures.isEmpty(), "load threads failed: " + failures);
        }

        private static void pause(long millis) {
            try {
                TimeUnit.MILLISECONDS.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private static void closeQuietly(Connection c) {
            if (c != null) {
                try {
                    c.close();
                } catch (SQLException ignored) {
                    // already broken
                }
            }
        }
    }
}
