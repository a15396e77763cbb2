package io.pgdurable.postgres.longpoll;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class LongPollSmokeTest {
    static final java.util.concurrent.atomic.AtomicLong NOTIFIED = new java.util.concurrent.atomic.AtomicLong();
    static final java.util.concurrent.atomic.AtomicLong WOKEN = new java.util.concurrent.atomic.AtomicLong();
    @Test
    void parked_fetch_returns_soon_after_enqueue() throws Exception {
        String schema = TestDatabase.newSchemaName("lpsmoke");
        java.util.concurrent.CountDownLatch listening = new java.util.concurrent.CountDownLatch(1);
        io.pgdurable.longpoll.LongPollSignals signals = new io.pgdurable.longpoll.LongPollSignals() {
            @Override
            public void listening(boolean reconnect) {
                listening.countDown();
            }

            @Override
            public void notification(String payload) {
                NOTIFIED.set(System.nanoTime());
            }

            @Override
            public void waiterWoken(String queue) {
                WOKEN.set(System.nanoTime());
            }
        };
        try (PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema).longPolling(true)
                .longPollSignals(signals).build())) {
            assertTrue(listening.await(10, TimeUnit.SECONDS));
            long[] lat = new long[30];
            for (int i = 0; i < lat.length; i++) {
                CompletableFuture<Optional<FetchedWorkItem>> parked = CompletableFuture.supplyAsync(
                        () -> p.fetchWorkItem(Duration.ofSeconds(30), Duration.ofSeconds(10), null, TagFilter.any()));
                while (p.longPolling().orElseThrow().parkedFetches() == 0) {
                    Thread.onSpinWait();
                }
                Thread.sleep(20);
                long start = System.nanoTime();
                p.enqueueForWorker(new WorkItem.ActivityExecute("i", 1, i, "A", "{}"));
                long enqueued = System.nanoTime();
                Optional<FetchedWorkItem> got = parked.get(5, TimeUnit.SECONDS);
                lat[i] = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - enqueued);
                System.out.println("enqueue call us " + (enqueued - start) / 1000 + " notified +" + (NOTIFIED.get() - enqueued) / 1000
                        + " woken +" + (WOKEN.get() - enqueued) / 1000 + " returned +" + lat[i]);
                assertTrue(got.isPresent());
                p.ackWorkItem(got.get().lockToken(), null);
            }
            java.util.Arrays.sort(lat);
            System.out.println("wake latency us p50 " + lat[15] + " max " + lat[29]);
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }
}
