package io.pgdurable.postgres.pgbouncer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The provider behind a real PgBouncer in transaction mode: a mixed workload (four threads of
 * enqueue/fetch/ack cycles, listener direct) fails on a pool that prepares statements on the server, with an error
 * that names {@code transactionPooler}, and passes with the setting; migrations go through {@code directUrl}; a
 * DataSource that would prepare statements on the server is refused.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TransactionPoolerTest {
    private static final int THREADS = 4;
    private static final int CYCLES = 300;
    /** What the provider's error adds when a session's prepared statements show a transaction pooler. */
    private static final String NAMES_THE_SETTING = "set transactionPooler(true)";
    private static final Duration LOCK = Duration.ofSeconds(60);
    private static final Duration POLL = Duration.ofSeconds(5);

    @Test
    void four_threads_of_enqueue_fetch_ack_cycles_through_the_pooler_all_succeed_with_the_setting() throws Exception {
        String schema = TestDatabase.newSchemaName("pgb_cycles");
        try (PostgresProvider p = PostgresProvider.create(PgBouncer.route(TestDatabase.config(schema))
                .poolSize(THREADS + 2).longPolling(true).build())) {
            Run run = cycles(p, false);
            assertEquals(List.of(), run.failures, "cycles failed through the pooler with transactionPooler on");
            assertEquals(THREADS * CYCLES, run.acked.size(), "every enqueued item was fetched and acked once");
            assertEquals(Optional.empty(), p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()),
                    "nothing left in the worker queue");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    /**
     * The control: the same workload with the setting off (migrations still direct) meets pgjdbc's named statements
     * on server sessions other clients prepared them on. It stops once a failure names the setting. The pool is a
     * DataSource of the test's own: a provider's own pool through the pooler is refused at start without the
     * setting ({@code UndeclaredTransactionPoolerTest}), and what that refusal prevents is shown here.
     */
    @Test
    void without_the_setting_the_same_cycles_fail_with_an_error_naming_it() throws Exception {
        String schema = TestDatabase.newSchemaName("pgb_control");
        HikariConfig preparing = new HikariConfig();
        preparing.setJdbcUrl(PgBouncer.url());
        preparing.setMaximumPoolSize(THREADS + 2);
        try (HikariDataSource ds = new HikariDataSource(preparing)) {
            List<String> failures;
            int acked;
            // The start's own statements (the clock check repeats one) can already meet another client's named
            // statement: then the start fails, and that failure is the one that must name the setting.
            try (PostgresProvider p = PostgresProvider.create(PostgresProviderConfig.builder().dataSource(ds)
                    .schema(schema).directUrl(TestDatabase.url()).longPolling(true).build())) {
                Run run = cycles(p, true);
                failures = run.failures;
                acked = run.acked.size();
            } catch (ProviderException atStart) {
                failures = List.of(String.valueOf(atStart.getMessage()));
                acked = 0;
            }
            assertFalse(failures.isEmpty(), "all " + acked + " cycles passed through a transaction "
                    + "pooler with server-side prepared statements: the control no longer shows the problem");
            List<String> seen = failures;
            assertTrue(seen.stream().anyMatch(m -> m.contains(NAMES_THE_SETTING)),
                    "no failure named the setting: " + seen);
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void migrations_connect_through_direct_url_not_through_the_pool() {
        String missing = TestDatabase.url().replaceFirst("^(jdbc:postgresql://[^/]+/)[^?]*", "$1pgdurable_no_such_db");
        String schema = TestDatabase.newSchemaName("pgb_direct");
        ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                TestDatabase.config(schema).jdbcUrl(PgBouncer.url()).transactionPooler(true).directUrl(missing)
                        .build()).close());
        assertTrue(e.getMessage().contains("pgdurable_no_such_db"), "the migration used directUrl: " + e.getMessage());
        assertFalse(e.retryable(), e.getMessage());
    }

    @Test
    void a_data_source_that_prepares_on_the_server_is_refused_and_one_that_does_not_works()
            throws InterruptedException {
        String schema = TestDatabase.newSchemaName("pgb_ds");
        UnaryOperator<HikariConfig> base = hc -> {
            hc.setJdbcUrl(PgBouncer.url());
            hc.setMaximumPoolSize(3);
            return hc;
        };
        try (HikariDataSource preparing = new HikariDataSource(base.apply(new HikariConfig()))) {
            ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                    PostgresProviderConfig.builder().dataSource(preparing).schema(schema).transactionPooler(true)
                            .directUrl(TestDatabase.url()).build()).close());
            assertTrue(e.getMessage().contains("prepareThreshold=5") && e.getMessage().contains("prepareThreshold=0"),
                    e.getMessage());
            assertFalse(e.retryable(), e.getMessage());
        }
        HikariConfig unprepared = base.apply(new HikariConfig());
        unprepared.addDataSourceProperty("prepareThreshold", "0");
        CountDownLatch listening = new CountDownLatch(1);
        LongPollSignals signals = new LongPollSignals() {
            @Override
            public void listening(boolean reconnect) {
                listening.countDown();
            }
        };
        try (HikariDataSource ds = new HikariDataSource(unprepared);
             PostgresProvider p = PostgresProvider.create(PostgresProviderConfig.builder().dataSource(ds)
                     .schema(schema).transactionPooler(true).directUrl(TestDatabase.url()).longPolling(true)
                     .longPollSignals(signals).build())) {
            assertTrue(listening.await(15, TimeUnit.SECONDS), "the listener connected through directUrl");
            p.enqueueForWorker(new WorkItem.ActivityExecute("ds-1", 1, 1, "Act", "{}"));
            FetchedWorkItem f = p.fetchWorkItem(LOCK, POLL, null, TagFilter.any()).orElseThrow();
            p.ackWorkItem(f.lockToken(), null);
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    private record Run(List<String> failures, Set<String> acked) {}

    /** {@link #THREADS} threads of {@link #CYCLES} enqueue/fetch/ack cycles; a cycle fails if any of its steps does. */
    private static Run cycles(PostgresProvider p, boolean stopAtNamedFailure) throws Exception {
        List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        Set<String> acked = ConcurrentHashMap.newKeySet();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<?>> threads = new ArrayList<>();
        try {
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                threads.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < CYCLES && !stop.get(); i++) {
                        try {
                            p.enqueueForWorker(new WorkItem.ActivityExecute("t" + thread + "-" + i, 1, 1, "Act", "{}"));
                            Optional<FetchedWorkItem> f = p.fetchWorkItem(LOCK, POLL, null, TagFilter.defaultOnly());
                            if (f.isEmpty()) {
                                failures.add("a fetch found nothing within " + POLL + " although an item was due");
                                continue;
                            }
                            p.ackWorkItem(f.get().lockToken(), null);
                            assertTrue(acked.add(f.get().item().instance()), "acked twice: " + f.get().item());
                        } catch (ProviderException e) {
                            failures.add(e.getMessage());
                            // A statement run with another's parameters fails on their values (22P02 and the like)
                            // before a session's missing or clashing statement names the setting: cycle on until
                            // one does.
                            if (stopAtNamedFailure && e.getMessage().contains(NAMES_THE_SETTING)) {
                                stop.set(true);
                            }
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : threads) {
                f.get(150, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "the cycle threads ended");
        }
        return new Run(new ArrayList<>(failures), new HashSet<>(acked));
    }
}
