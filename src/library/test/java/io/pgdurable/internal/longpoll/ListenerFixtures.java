package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.ChannelListener;
import io.pgdurable.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Shared pieces of the listener and notifier tests: drivers, unique channels, NOTIFY, finding the backend. */
final class ListenerFixtures {
    private ListenerFixtures() {}

    /** Both listener implementations. */
    enum Driver {
        PGJDBC_NG {
            @Override
            NotificationListener create(String url, Duration connectTimeout) {
                return new PgjdbcNgListener(url, connectTimeout, false);
            }
        },
        PGJDBC {
            @Override
            NotificationListener create(String url, Duration connectTimeout) {
                return new PgjdbcListener(url, connectTimeout, false);
            }
        };

        abstract NotificationListener create(String url, Duration connectTimeout);

        NotificationListener create(String url) {
            return create(url, Duration.ofSeconds(10));
        }
    }

    /** A channel no other test uses; mixed case and a dot, so quoting is exercised. */
    static String newChannel() {
        return "pgdurable_test_Ch." + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    static void sendNotify(String channel, String payload) throws SQLException {
        try (Connection c = TestDatabase.connect()) {
            sendNotify(c, channel, payload);
        }
    }

    static void sendNotify(Connection c, String channel, String payload) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, payload);
            ps.execute();
        }
    }

    /**
     * The pid of the listener backend LISTENing on {@code channel} (found by its last statement, which stays the
     * LISTEN as long as no heartbeat ran: use a long heartbeat), other than those in {@code exclude}.
     */
    static int listenerPid(String channel, Set<Integer> exclude, Duration timeout) throws SQLException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = TestDatabase.connect();
                PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE query = ? "
                        + "AND application_name = ? AND pid <> pg_backend_pid() ORDER BY backend_start DESC")) {
            ps.setString(1, "LISTEN " + NotifyChannel.quoted(channel));
            ps.setString(2, ChannelListener.APPLICATION_NAME);
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        int pid = rs.getInt(1);
                        if (!exclude.contains(pid)) {
                            return pid;
                        }
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no listener backend LISTENs on " + channel);
                }
                pause(20);
            }
        }
    }

    /** Waits (bounded) until no backend has {@code pid}. */
    static boolean backendGone(int pid, Duration timeout) throws SQLException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = TestDatabase.connect();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE pid = ?")) {
            ps.setInt(1, pid);
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getInt(1) == 0) {
                        return true;
                    }
                }
                if (System.nanoTime() > deadline) {
                    return false;
                }
                pause(20);
            }
        }
    }

    static void terminate(int pid) throws SQLException {
        try (Connection c = TestDatabase.connect();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    throw new AssertionError("could not terminate backend " + pid);
                }
            }
        }
    }

    /** Polling interval of a bounded condition check (never used as a synchronisation by itself). */
    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    static long millisSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    /** Records what a session reports. */
    static final class Recorder implements NotificationListener.Events {
        final BlockingQueue<String> payloads = new LinkedBlockingQueue<>();
        final CountDownLatch lost = new CountDownLatch(1);
        final AtomicInteger lostCount = new AtomicInteger();
        volatile long lostAtNanos;
        volatile Throwable cause;

        @Override
        public void notification(String payload) {
            payloads.add(payload);
        }

        @Override
        public void lost(Throwable cause) {
            this.cause = cause;
            lostAtNanos = System.nanoTime();
            lostCount.incrementAndGet();
            lost.countDown();
        }
    }
}
