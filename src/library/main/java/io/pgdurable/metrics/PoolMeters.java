package io.pgdurable.metrics;

import com.zaxxer.hikari.metrics.IMetricsTracker;
import com.zaxxer.hikari.metrics.MetricsTrackerFactory;
import com.zaxxer.hikari.metrics.PoolStats;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * HikariCP's own Micrometer meters for a provider's pool, which the provider replaces by a fresh one (same name)
 * after an outage. HikariCP's tracker registers its meters by the pool's name and removes them by name when its pool
 * closes, so left alone the fresh pool's registration would find the old pool's meters in place, and the old pool's
 * closing a little later would remove them: no pool meters from then on. Here a new pool's tracker first retires
 * the previous one (the replaced pool is empty by then), and a retired tracker's close removes nothing.
 */
final class PoolMeters implements MetricsTrackerFactory {
    private final MicrometerMetricsTrackerFactory micrometer;
    /** The tracker of the newest pool; guarded by {@code this}. */
    private IMetricsTracker current;

    PoolMeters(MeterRegistry registry) {
        this.micrometer = new MicrometerMetricsTrackerFactory(registry);
    }

    @Override
    public synchronized IMetricsTracker create(String poolName, PoolStats stats) {
        if (current != null) {
            current.close();
        }
        IMetricsTracker tracker = micrometer.create(poolName, stats);
        current = tracker;
        return new Tracked(tracker);
    }

    /** Closes {@code tracker}'s meters unless a newer pool's tracker has taken their names. */
    private synchronized void closed(IMetricsTracker tracker) {
        if (current == tracker) {
            tracker.close();
            current = null;
        }
    }

    /** One pool's tracker, retired rather than closed once a newer pool took over. */
    private final class Tracked implements IMetricsTracker {
        private final IMetricsTracker tracker;

        Tracked(IMetricsTracker tracker) {
            this.tracker = tracker;
        }

        @Override
        public void recordConnectionCreatedMillis(long millis) {
            tracker.recordConnectionCreatedMillis(millis);
        }

        @Override
        public void recordConnectionAcquiredNanos(long nanos) {
            tracker.recordConnectionAcquiredNanos(nanos);
        }

        @Override
        public void recordConnectionUsageMillis(long millis) {
            tracker.recordConnectionUsageMillis(millis);
        }

        @Override
        public void recordConnectionTimeout() {
            tracker.recordConnectionTimeout();
        }

        @Override
        public void close() {
            closed(tracker);
        }
    }
}
