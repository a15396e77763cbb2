package io.pgdurable.chaos;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import java.io.IOException;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One chaos run: a provider whose pool and listener reach the server through two loopback relays, producers and
 * long-polling consumers working through it, and a {@link FaultInjector} killing backends and pausing the listener's
 * relay. When the time is up the producers stop, the faults stop, the consumers drain the queue, and the
 * {@link Ledger} is verified.
 */
public final class ChaosRun {
    /** How long the consumers get to handle what is left once the faults have stopped. */
    static final Duration DRAIN_LIMIT = Duration.ofSeconds(60);
    private static final long PROGRESS_EVERY_MILLIS = 10_000;
    private static final long LEASE_END_MARGIN_NANOS = Workload.LEASE.plusSeconds(1).toNanos();

    private final ChaosSettings settings;
    private final Consumer<String> progress;
    private final String runId;
    private final Random random;

    /** {@code progress} receives a line now and then during a run (never from a fault's thread). */
    public ChaosRun(ChaosSettings settings, Consumer<String> progress) {
        this.settings = settings;
        this.progress = progress;
        byte[] id = new byte[4];
        new SecureRandom().nextBytes(id);
        this.runId = HexFormat.of().formatHex(id);
        this.random = new Random();
    }

    /**
     * Runs for the settings' duration and reports. Throws {@link ProviderException} when the database cannot be
     * used at all (the provider does not start), {@link IllegalStateException} when the schema already has work
     * queued (foreign items would make the ledger meaningless).
     */
    public ChaosReport run() throws IOException, SQLException, InterruptedException {
        ListenerEvents listenerEvents = new ListenerEvents();
        ErrorTally errors = new ErrorTally();
        Ledger ledger = new Ledger(settings.schema(), runId);
        try (LoopbackRelay poolRelay = new LoopbackRelay("pool", settings.host(), settings.port());
             LoopbackRelay listenerRelay = new LoopbackRelay("listener", settings.host(), settings.port());
             AdminConnection admin = new AdminConnection(settings.jdbcUrl())) {
            connect(admin);
            PostgresProviderConfig config = PostgresProviderConfig.builder()
                    .jdbcUrl(settings.throughRelay(poolRelay.port()))
                    .listenerUrl(settings.throughRelay(listenerRelay.port()))
                    .listenerDriver(settings.listenerDriver())
                    .schema(settings.schema())
                    .poolSize(settings.producers() + settings.consumers() + 2)
                    .connectionTimeout(Duration.ofSeconds(5))
                    .longPolling(true)
                    .longPollSignals(listenerEvents)
                    .build();
            try (PostgresProvider provider = PostgresProvider.create(config)) {
                ledger.createTable(admin.get());
                ProviderAdmin management = provider.asManagementCapability().orElseThrow();
                int queued = management.getQueueDepths().workerQueue();
                if (queued > 0) {
                    throw new IllegalStateException("schema " + settings.schema() + " has " + queued + " work "
                            + "item(s) queued already; chaos needs a worker queue of its own (use another --schema)");
                }
                Workload load = new Workload(provider, ledger, errors, settings.jdbcUrl(), runId,
                        settings.producers(), settings.consumers(), settings.itemsPerSecond());
                FaultInjector faults = new FaultInjector(admin, listenerRelay, poolRelay, random);
                long started = System.nanoTime();
                long producersStopped;
                boolean drained;
                load.start();
                faults.start();
                try {
                    try {
                        runFor(settings.duration(), started, ledger, faults);
                    } finally {
                        try {
                            load.stopProducers();
                        } finally {
                            faults.close();
                        }
                    }
                    producersStopped = System.nanoTime();
                    drained = drain(ledger, management);
                } finally {
                    load.stopConsumers(); // before the provider closes, also when the run failed
                }
                long drainNanos = System.nanoTime() - producersStopped;
                Ledger.Verdict verdict = ledger.verify(admin.get());
                if (verdict.passed() && load.crashes().isEmpty()) {
                    ledger.deleteRun(admin.get()); // kept for inspection only when something is wrong
                }
                return new ChaosReport(settings, runId, producersStopped - started, drained, drainNanos, verdict,
                        faults.counts(), errors.snapshot(), listenerEvents.lost.get(),
                        listenerEvents.failedAttempts(), listenerEvents.reconnects.get(),
                        load.crashes().stream().map(String::valueOf).toList());
            }
        }
    }

    /**
     * Connects once straight to the server first, so an unreachable server or a refused login is reported with the
     * URL that was given, not the relay's.
     */
    private void connect(AdminConnection admin) {
        try {
            admin.get();
        } catch (SQLException e) {
            String state = e.getSQLState();
            throw new ProviderException("connect", "cannot connect to "
                    + JdbcUrls.redact(settings.jdbcUrl()) + ": " + e.getMessage(),
                    state == null || state.startsWith("08"), state, e);
        }
    }

    private void runFor(Duration duration, long started, Ledger ledger, FaultInjector faults)
            throws InterruptedException {
        CountDownLatch never = new CountDownLatch(1);
        long end = started + duration.toNanos();
        long nextProgress = started + TimeUnit.MILLISECONDS.toNanos(PROGRESS_EVERY_MILLIS);
        while (true) {
            long now = System.nanoTime();
            if (now - end >= 0) {
                return;
            }
            long wait = Math.min(end - now, nextProgress - now);
            if (wait > 0) {
                never.await(wait, TimeUnit.NANOSECONDS);
                continue;
            }
            FaultInjector.Counts c = faults.counts();
            progress.accept(String.format("%5.0f s: %d committed, %d handled; listener kills %d, pool kills %d, "
                            + "relay pauses %d", (now - started) / 1e9, ledger.committedCount(),
                    ledger.recordedCount(), c.listenerKills(), c.poolKills(), c.pauses()));
            nextProgress += TimeUnit.MILLISECONDS.toNanos(PROGRESS_EVERY_MILLIS);
        }
    }

    /**
     * Waits until every committed item is handled and the worker queue is empty (ambiguous enqueues that did commit
     * are handled too), and until the lease of any item left leased by a failed ack has ended (the depth does not
     * count leased items), bounded by {@link #DRAIN_LIMIT}.
     */
    private static boolean drain(Ledger ledger, ProviderAdmin management) throws InterruptedException {
        CountDownLatch never = new CountDownLatch(1);
        long deadline = System.nanoTime() + DRAIN_LIMIT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            boolean leasesEnded = System.nanoTime() - ledger.lastLeftLeasedNanos() - LEASE_END_MARGIN_NANOS > 0;
            if (leasesEnded && ledger.allCommittedRecorded()) {
                try {
                    if (management.getQueueDepths().workerQueue() == 0) {
                        return true;
                    }
                } catch (ProviderException e) {
                    // the faults have stopped; the pool renews itself
                }
            }
            never.await(50, TimeUnit.MILLISECONDS);
        }
        return false;
    }

    /** How often the listener connection was found dead, failed to connect, and listened again. */
    private static final class ListenerEvents implements LongPollSignals {
        final AtomicLong lost = new AtomicLong();
        final AtomicLong reconnects = new AtomicLong();
        final AtomicLong backoffs = new AtomicLong();

        /** The notifier backs off after a lost connection and after each failed attempt to connect and LISTEN. */
        @Override
        public void backoff(int failures, Duration delay) {
            backoffs.incrementAndGet();
        }

        long failedAttempts() {
            return Math.max(0, backoffs.get() - lost.get());
        }

        @Override
        public void listening(boolean reconnect) {
            if (reconnect) {
                reconnects.incrementAndGet();
            }
        }

        @Override
        public void connectionLost(Throwable cause) {
            lost.incrementAndGet();
        }
    }
}
