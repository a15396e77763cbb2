package io.pgdurable.durabletask;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.longpoll.ChannelListener;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes client calls that wait for an instance's status to change (WaitForInstanceStart/Completion). A turn that
 * changes a client-visible status signals its instance here after its ack: waiters in this process wake at once,
 * and with a JDBC URL the instance id is also NOTIFYed on the schema's status channel, which every sidecar on the
 * database LISTENs to, so a turn committed by another sidecar wakes waiters here too. A lost notification (a
 * listener reconnecting, a sidecar dying between ack and NOTIFY) only delays a waiter until its next periodic
 * re-read.
 */
final class InstanceWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(InstanceWatch.class);
    // A dot never appears in a schema name, so this cannot collide with a provider channel (pgdurable_<schema>).
    private static final String PREFIX = "pgdurable.dt.";

    private final Map<String, Set<CompletableFuture<Void>>> waiters = new ConcurrentHashMap<>();
    private final HikariDataSource notifyPool;
    private final ChannelListener listener;
    private final ExecutorService notifySender;
    private final String channel;
    private final FailureLog notifyFailures = new FailureLog(LOG, "status NOTIFY");

    private InstanceWatch(String jdbcUrl, String schema) {
        if (jdbcUrl == null) {
            notifyPool = null;
            listener = null;
            notifySender = null;
            channel = null;
            return;
        }
        channel = channelFor(schema);
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(jdbcUrl);
        hc.setPoolName("pgdurable-dt-notify");
        hc.setMaximumPoolSize(1);
        hc.setMinimumIdle(0);
        hc.setConnectionTimeout(5_000);
        hc.setInitializationFailTimeout(-1); // the database may come up later; notifications are best effort
        notifyPool = new HikariDataSource(hc);
        notifySender = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "pgdurable-dt-notify");
            t.setDaemon(true);
            return t;
        });
        listener = ChannelListener.start(jdbcUrl, channel, Duration.ofSeconds(30), this::wake, this::wakeAll);
    }

    /** Signals within this process only. */
    static InstanceWatch local() {
        return new InstanceWatch(null, null);
    }

    /** Signals across every sidecar on the database of {@code jdbcUrl}, on a channel derived from {@code schema}. */
    static InstanceWatch shared(String jdbcUrl, String schema) {
        return new InstanceWatch(jdbcUrl, schema);
    }

    /** {@code pgdurable.dt.<schema>}, shortened with a hash of the schema when it would pass 63 bytes. */
    static String channelFor(String schema) {
        return ChannelListener.channelName(PREFIX, schema);
    }

    /** Registers interest before the caller reads the status, so a change in between is not missed. */
    CompletableFuture<Void> register(String instance) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        waiters.computeIfAbsent(instance, k -> ConcurrentHashMap.newKeySet()).add(f);
        return f;
    }

    void deregister(String instance, CompletableFuture<Void> f) {
        waiters.computeIfPresent(instance, (k, set) -> {
            set.remove(f);
            return set.isEmpty() ? null : set;
        });
    }

    /** Waits until the registration is signalled or {@code timeout} passes; false when interrupted. */
    static boolean await(CompletableFuture<Void> f, Duration timeout) {
        try {
            f.get(Math.max(1, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException | ExecutionException e) {
            // a timeout means "re-read now"; nothing completes these exceptionally
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        return true;
    }

    /** The status of {@code instance} changed here: wake local waiters and tell the other sidecars. */
    void signal(String instance) {
        wake(instance);
        if (notifySender == null) {
            return;
        }
        try {
            notifySender.execute(() -> sendNotify(instance));
        } catch (RejectedExecutionException closing) {
            // closing: other sidecars fall back to their periodic re-read
        }
    }

    private void sendNotify(String instance) {
        try (Connection c = notifyPool.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, instance);
            ps.execute();
            notifyFailures.recovered();
        } catch (SQLException | RuntimeException e) {
            notifyFailures.failed(e);
        }
    }

    private void wake(String instance) {
        Set<CompletableFuture<Void>> set = waiters.get(instance);
        if (set != null) {
            set.forEach(f -> f.complete(null));
        }
    }

    /** After (re)connecting the listener: anything may have changed while it was away. */
    private void wakeAll() {
        waiters.values().forEach(set -> set.forEach(f -> f.complete(null)));
    }

    @Override
    public void close() {
        wakeAll();
        if (listener != null) {
            listener.close();
        }
        if (notifySender != null) {
            notifySender.shutdown();
            try {
                notifySender.awaitTermination(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            notifySender.shutdownNow();
        }
        if (notifyPool != null) {
            notifyPool.close();
        }
    }
}
