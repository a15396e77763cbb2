package io.pgdurable.metrics;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.spi.ProviderAdmin;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The queue depth gauges' reads of the database: at most one per refresh interval, whoever scrapes and however
 * often. The gauge that finds the last read stale reads again on its own thread; a gauge read meanwhile (the other
 * queue's, another scraper's) gets the previous figures instead of waiting or querying too. A failed read shows NaN
 * until the next one, and is logged at most once a minute.
 */
final class QueueDepths {
    private static final Logger LOG = LoggerFactory.getLogger(QueueDepths.class);
    private static final long WARN_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final long refreshNanos;
    private final Supplier<PostgresProvider> provider;
    private final AtomicBoolean reading = new AtomicBoolean();
    /** When the latest read started (System.nanoTime); meaningful once {@link #read} is true. */
    private volatile long readAt;
    private volatile boolean read;
    private volatile double orchestrator = Double.NaN;
    private volatile double worker = Double.NaN;
    private long lastWarn;
    private boolean warned;

    QueueDepths(Duration refresh, Supplier<PostgresProvider> provider) {
        this.refreshNanos = refresh.toNanos();
        this.provider = provider;
    }

    double orchestrator() {
        refreshIfStale();
        return orchestrator;
    }

    double worker() {
        refreshIfStale();
        return worker;
    }

    private void refreshIfStale() {
        if (read && System.nanoTime() - readAt < refreshNanos) {
            return;
        }
        if (!reading.compareAndSet(false, true)) {
            return;
        }
        try {
            long now = System.nanoTime();
            if (read && now - readAt < refreshNanos) {
                return; // another thread read while this one was deciding
            }
            readAt = now; // before the query: a failing database is asked once per interval too
            read = true;
            PostgresProvider p = provider.get();
            if (p == null) {
                orchestrator = Double.NaN;
                worker = Double.NaN;
                return;
            }
            try {
                ProviderAdmin.QueueDepths d = p.asManagementCapability().orElseThrow().getQueueDepths();
                orchestrator = d.orchestratorQueue();
                worker = d.workerQueue();
            } catch (RuntimeException e) {
                orchestrator = Double.NaN;
                worker = Double.NaN;
                if (!warned || now - lastWarn >= WARN_INTERVAL_NANOS) {
                    warned = true;
                    lastWarn = now;
                    LOG.warn("pgdurable: could not read the queue depths for the metrics (shown as NaN; next "
                            + "warning in a minute at the earliest): {}", e.getMessage());
                } else {
                    LOG.debug("pgdurable: queue depth read failed: {}", e.getMessage());
                }
            }
        } finally {
            reading.set(false);
        }
    }
}
