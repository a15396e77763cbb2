package io.pgdurable.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.zaxxer.hikari.metrics.IMetricsTracker;
import com.zaxxer.hikari.metrics.PoolStats;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/**
 * The provider replaces its pool after an outage by a fresh one of the same name (RenewingPool) and closes the old
 * one a little later: the pool meters must then show the fresh pool, and stay.
 */
class PoolMetersTest {
    private static final String POOL = "pgdurable-renewed";

    @Test
    void a_renewed_pool_keeps_its_meters_when_the_replaced_one_closes() {
        MeterRegistry registry = new SimpleMeterRegistry();
        PoolMeters meters = new PoolMeters(registry);
        IMetricsTracker replaced = meters.create(POOL, stats(0));
        assertEquals(0, connections(registry).value());

        IMetricsTracker fresh = meters.create(POOL, stats(3));
        assertEquals(3, connections(registry).value(), "the fresh pool's figures");
        replaced.close();
        assertEquals(3, connections(registry).value(), "the replaced pool's closing leaves the fresh one's meters");
        fresh.recordConnectionTimeout();
        assertEquals(1, registry.find("hikaricp.connections.timeout").tag("pool", POOL).counter().count());

        fresh.close();
        assertNull(registry.find("hikaricp.connections").tag("pool", POOL).gauge(), "gone with the last pool");
    }

    private static Gauge connections(MeterRegistry registry) {
        return registry.find("hikaricp.connections").tag("pool", POOL).gauge();
    }

    /** A pool's figures: {@code total} connections, all idle. */
    private static PoolStats stats(int total) {
        return new PoolStats(0) {
            @Override
            protected void update() {
                totalConnections = total;
                idleConnections = total;
            }
        };
    }
}
