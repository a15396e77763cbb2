package io.pgdurable.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Samples what the provider's active backends wait on ({@code pg_stat_activity.wait_event_type:wait_event}, or
 * {@code CPU} when they wait on nothing) every few milliseconds, to show where notifying commits spend their time
 * under load (PostgreSQL serialises the commits of notifying transactions on one global lock).
 */
final class WaitEventSampler implements AutoCloseable {
    private static final String SQL = "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity "
            + "WHERE datname = current_database() AND state = 'active' AND application_name = 'pgdurable' "
            + "AND pid <> pg_backend_pid()";

    private final Connection connection;
    private final long intervalMillis;
    private Map<String, Long> counts = new TreeMap<>();
    private long samples;
    private Thread thread;
    private volatile boolean running;

    WaitEventSampler(String url, long intervalMillis) throws SQLException {
        this.connection = DriverManager.getConnection(url);
        this.intervalMillis = intervalMillis;
        try (Statement st = connection.createStatement()) {
            st.execute("SET application_name = 'pgdurable-bench-sampler'");
        }
    }

    /** Starts a fresh sampling period (one at a time). */
    synchronized void start() {
        counts = new TreeMap<>();
        samples = 0;
        running = true;
        thread = new Thread(this::loop, "bench-wait-events");
        thread.setDaemon(true);
        thread.start();
    }

    private void loop() {
        while (running) {
            try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(SQL)) {
                Map<String, Long> seen = new TreeMap<>();
                while (rs.next()) {
                    seen.merge(rs.getString(1), 1L, Long::sum);
                }
                synchronized (this) {
                    samples++;
                    seen.forEach((k, v) -> counts.merge(k, v, Long::sum));
                }
            } catch (SQLException e) {
                return;
            }
            if (!Pause.sleep(intervalMillis)) {
                return;
            }
        }
    }

    /** Stops the period and returns {@code {samples, backends: {event: observations}}}. */
    Map<String, Object> stop() throws InterruptedException {
        running = false;
        if (thread != null) {
            thread.join(5_000);
        }
        synchronized (this) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("samples", samples);
            m.put("activeBackendObservations", new LinkedHashMap<>(counts));
            return m;
        }
    }

    @Override
    public void close() {
        running = false;
        try {
            connection.close();
        } catch (SQLException e) {
            // closing anyway
        }
    }
}
