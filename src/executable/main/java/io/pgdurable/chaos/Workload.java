package io.pgdurable.chaos;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Producers enqueueing activities at a steady total rate and long-polling consumers handling them through one
 * provider: a consumer writes each delivery to the {@link Ledger} before it acks, and leaves an item it could not
 * write unacked (it comes back when its lease ends).
 */
final class Workload {
    private static final Logger log = LoggerFactory.getLogger(Workload.class);
    static final Duration LEASE = Duration.ofSeconds(5);
    private static final Duration POLL = Duration.ofSeconds(1);
    private static final long ERROR_BACKOFF_MILLIS = 50;
    /** A producer that fell this far behind its schedule (an outage) starts a new one instead of bursting. */
    private static final long MAX_LAG_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final OrchestrationProvider provider;
    private final Ledger ledger;
    private final ErrorTally errors;
    private final String adminUrl;
    private final String instancePrefix;
    private final int producers;
    private final int consumers;
    private final long producerPeriodNanos;
    private final AtomicLong nextItem = new AtomicLong();
    private final CountDownLatch stopProducing = new CountDownLatch(1);
    private final CountDownLatch stopConsuming = new CountDownLatch(1);
    private final List<Thread> producerThreads = new ArrayList<>();
    private final List<Thread> consumerThreads = new ArrayList<>();
    private final List<Throwable> crashes = new CopyOnWriteArrayList<>();

    Workload(OrchestrationProvider provider, Ledger ledger, ErrorTally errors, String adminUrl, String runId,
             int producers, int consumers, int itemsPerSecond) {
        this.provider = provider;
        this.ledger = ledger;
        this.errors = errors;
        this.adminUrl = adminUrl;
        this.instancePrefix = "chaos-" + runId + "-p";
        this.producers = producers;
        this.consumers = consumers;
        this.producerPeriodNanos = TimeUnit.SECONDS.toNanos(1) * producers / itemsPerSecond;
    }

    void start() {
        for (int c = 0; c < consumers; c++) {
            consumerThreads.add(spawn("pgdurable-chaos-consumer-" + c, this::consume));
        }
        for (int p = 0; p < producers; p++) {
            int producer = p;
            producerThreads.add(spawn("pgdurable-chaos-producer-" + p, () -> produce(producer)));
        }
    }

    private Thread spawn(String name, Runnable body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                crashes.add(e);
                log.error("chaos: {} stopped", Thread.currentThread().getName(), e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private void produce(int producer) {
        String instance = instancePrefix + producer;
        long next = System.nanoTime();
        try {
            while (!waitUntil(next)) {
                long item = nextItem.getAndIncrement();
                try {
                    provider.enqueueForWorker(new WorkItem.ActivityExecute(instance, 1, item, "Chaos", "{}"));
                    ledger.committed(item, System.nanoTime());
                } catch (ProviderException e) {
                    ledger.ambiguous(item); // the commit may or may not have happened
                    errors.seen("enqueue", e);
                    if (stopProducing.await(ERROR_BACKOFF_MILLIS, TimeUnit.MILLISECONDS)) {
                        return;
                    }
                }
                next += producerPeriodNanos;
                if (System.nanoTime() - next > MAX_LAG_NANOS) {
                    next = System.nanoTime();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits for the producer's next slot; true when the producers are to stop. */
    private boolean waitUntil(long nanoTime) throws InterruptedException {
        long wait = nanoTime - System.nanoTime();
        return wait > 0 ? stopProducing.await(wait, TimeUnit.NANOSECONDS) : stopProducing.getCount() == 0;
    }

    private void consume() {
        try (AdminConnection ledgerConnection = new AdminConnection(adminUrl)) {
            while (stopConsuming.getCount() > 0) {
                Optional<FetchedWorkItem> got;
                try {
                    got = provider.fetchWorkItem(LEASE, POLL, null, TagFilter.defaultOnly());
                } catch (ProviderException e) {
                    errors.seen("fetch", e);
                    pause();
                    continue;
                }
                if (got.isEmpty()) {
                    continue;
                }
                long item = ((WorkItem.ActivityExecute) got.get().item()).id();
                ledger.fetched(item, System.nanoTime());
                try {
                    ledger.record(ledgerConnection.get(), item);
                } catch (SQLException e) {
                    ledger.recordFailed(item);
                    ledgerConnection.reset();
                    pause();
                    continue; // unacked: the lease ends and the item comes back
                }
                try {
                    provider.ackWorkItem(got.get().lockToken(), null);
                } catch (ProviderException e) {
                    ledger.ackFailed(item);
                    errors.seen("ack", e);
                }
            }
        }
    }

    private void pause() {
        try {
            stopConsuming.await(ERROR_BACKOFF_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops the producers and waits for them (bounded by one enqueue call each). */
    void stopProducers() throws InterruptedException {
        stopProducing.countDown();
        join(producerThreads);
    }

    /** Stops the consumers (each within one poll timeout) and waits for them. */
    void stopConsumers() throws InterruptedException {
        stopConsuming.countDown();
        join(consumerThreads);
    }

    private static void join(List<Thread> threads) throws InterruptedException {
        for (Thread t : threads) {
            t.join(30_000);
        }
    }

    /** Worker threads that ended with an unexpected exception. */
    List<Throwable> crashes() {
        return List.copyOf(crashes);
    }
}
