package io.pgdurable.postgres.longpoll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * An idle announcer's hints travel inside the writing statement: another process is
 * woken by the write's own commit, a failed write tells nobody, and under load the announcer batches as before.
 */
class InlineNotifyTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private final List<PostgresProvider> providers = new ArrayList<>();
    private final String schema = TestDatabase.newSchemaName("inline");

    /** Counts what the announcer reports. */
    private static final class Counts implements LongPollSignals {
        final AtomicInteger inlineHandedOut = new AtomicInteger();
        final AtomicInteger sendTransactions = new AtomicInteger();

        @Override
        public void announcedInline(int payloads) {
            inlineHandedOut.incrementAndGet();
        }

        @Override
        public void announced(int payloads) {
            sendTransactions.incrementAndGet();
        }
    }

    @AfterEach
    void stop() {
        providers.forEach(PostgresProvider::close);
        TestDatabase.dropSchema(schema);
    }

    private PostgresProvider provider(Counts counts, UnaryOperator<io.pgdurable.postgres.PostgresProviderConfig.Builder>
            tune) {
        PostgresProvider p = PostgresProvider.create(tune.apply(TestDatabase.config(schema).longPolling(true)
                .longPollSignals(counts)).build());
        providers.add(p);
        Waits.until(() -> p.longPolling().orElseThrow().isListening(), Duration.ofSeconds(15),
                () -> "the provider listens");
        return p;
    }

    private static WorkItem.ActivityExecute activity(long id) {
        return new WorkItem.ActivityExecute("inst", 1, id, "A", "{}");
    }

    private static CompletableFuture<Optional<FetchedWorkItem>> parkedFetch(PostgresProvider p) {
        CompletableFuture<Optional<FetchedWorkItem>> f = CompletableFuture.supplyAsync(() ->
                p.fetchWorkItem(LOCK, Duration.ofSeconds(20), null, TagFilter.defaultOnly()));
        Waits.until(() -> p.longPolling().orElseThrow().parkedFetches() >= 1, Duration.ofSeconds(10),
                () -> "the fetch parks");
        return f;
    }

    @Test
    void an_idle_writer_wakes_another_process_from_its_own_commit() throws Exception {
        Counts writerCounts = new Counts();
        PostgresProvider writer = provider(writerCounts, b -> b);
        PostgresProvider other = provider(new Counts(), b -> b);
        CompletableFuture<Optional<FetchedWorkItem>> fetch = parkedFetch(other);
        writer.enqueueForWorker(activity(1));
        Optional<FetchedWorkItem> got = fetch.get(5, TimeUnit.SECONDS);
        assertEquals(1, ((WorkItem.ActivityExecute) got.orElseThrow().item()).id());
        assertEquals(1, writerCounts.inlineHandedOut.get(), "the hint went inside the enqueue");
        assertEquals(0, writerCounts.sendTransactions.get(), "no announcement transaction was needed");
    }

    @Test
    void a_failed_write_tells_nobody() throws Exception {
        Counts counts = new Counts();
        PostgresProvider writer = provider(counts, b -> b);
        try (Connection listener = DriverManager.getConnection(TestDatabase.url())) {
            TestDatabase.listenAsAnotherProcess(listener, schema);
            ProviderException e = assertThrows(ProviderException.class, () -> writer.ackWorkItem("no-such-token",
                    new WorkItem.ActivityCompleted("inst", 1, 1, "\"r\"")));
            assertFalse(e.retryable());
            assertEquals(1, counts.inlineHandedOut.get(), "the completion's hint was handed to the failed ack");
            writer.enqueueForWorker(activity(2)); // a marker that must arrive, after anything the ack sent
            List<String> payloads = receiveUntilWorkerHint(listener);
            assertEquals(1, payloads.size(), "only the marker's hint: " + payloads);
            assertTrue(payloads.get(0).startsWith("w|"), payloads.toString());
        }
    }

    private static List<String> receiveUntilWorkerHint(Connection listener) throws SQLException {
        List<String> payloads = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (payloads.stream().noneMatch(p -> p.startsWith("w|"))) {
            assertTrue(System.nanoTime() < deadline, "no worker hint within 5 s: " + payloads);
            PGNotification[] got = listener.unwrap(PGConnection.class).getNotifications(250);
            if (got != null) {
                for (PGNotification n : got) {
                    payloads.add(n.getParameter());
                }
            }
        }
        return payloads;
    }

    @Test
    void under_load_the_announcer_batches_as_before() throws Exception {
        Counts counts = new Counts();
        PostgresProvider writer = provider(counts, b -> b);
        PostgresProvider other = provider(new Counts(), b -> b);
        int threads = 8;
        int perThread = 25;
        int n = threads * perThread;
        // Concurrent writers make the load: a lone sequential writer on a busy machine can take longer than the
        // spacing per write, and then every write is rightly alone.
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int first = t * perThread;
            done.add(pool.submit(() -> {
                start.await();
                for (int i = first; i < first + perThread; i++) {
                    writer.enqueueForWorker(activity(i));
                }
                return null;
            }));
        }
        long began = System.nanoTime();
        start.countDown();
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        long spanMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
        pool.shutdown();
        int inline = counts.inlineHandedOut.get();
        assertTrue(inline >= 1, "the first write of the burst found the announcer idle");
        assertTrue(inline <= spanMs / 4 + 1, "at most one inline write per 4 ms spacing: " + inline + " in "
                + spanMs + " ms");
        assertTrue(inline < n, "concurrent writes shared an announcement: " + inline + " of " + n + " inline");
        Waits.until(() -> counts.sendTransactions.get() >= 1, Duration.ofSeconds(5),
                () -> "the rest was announced in batches");
        assertTrue(counts.sendTransactions.get() < n - inline, "batched: " + counts.sendTransactions.get()
                + " transactions for " + (n - inline) + " writes");
        int fetched = 0;
        while (other.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).isPresent()) {
            fetched++;
        }
        assertEquals(n, fetched);
    }
}
