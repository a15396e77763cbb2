package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.ChannelListener;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link NotificationListener} on plain pgjdbc, for deployments that must not ship pgjdbc-ng and its netty jars.
 *
 * <p>pgjdbc has no asynchronous listener and its listener connection can only be used from one thread
 * ({@code getNotifications} holds the connection lock while it waits), so each session owns a dedicated daemon
 * thread that connects, LISTENs, and then loops on {@code getNotifications(heartbeat)}. When a wait ends in silence
 * the same thread runs {@code isValid(2)}; an exception or {@code false} reports the loss and ends the thread. A
 * delivery costs about 1.1 ms more than with pgjdbc-ng and batches under load (docs/decisions.md, "The JDBC drivers").
 *
 * <p>{@link Session#close()} aborts the connection from another thread ({@link Connection#abort}, which closes the
 * socket and so unblocks the waiting read), waits a bounded time for the thread to end, and otherwise abandons it.
 */
public final class PgjdbcListener implements NotificationListener {
    private static final Logger LOG = LoggerFactory.getLogger(PgjdbcListener.class);

    static final int VALIDATION_TIMEOUT_SECONDS = 2;
    private static final long CLOSE_WAIT_MILLIS = 800;

    private final String url;
    private final Properties properties;
    private final Duration connectTimeout;
    private final boolean livenessLock;

    /**
     * @param jdbcUrl the provider's pgjdbc URL ({@code jdbc:postgresql:...}); credentials may be URL parameters.
     * @param connectTimeout how long {@link #open} may take to connect and LISTEN before it gives up
     * @param livenessLock whether each session also holds a session advisory lock on a fresh random
     *                     key ({@link Session#livenessKey()}), by which other processes tell that it still lives
     */
    public PgjdbcListener(String jdbcUrl, Duration connectTimeout, boolean livenessLock) {
        this.livenessLock = livenessLock;
        ListenerSupport.requirePgjdbcUrl(jdbcUrl);
        this.connectTimeout = ListenerSupport.requirePositive(connectTimeout, "connectTimeout");
        this.url = withoutParameter(jdbcUrl, "ApplicationName");
        Properties p = new Properties();
        // URL parameters win over these defaults, except the application name, which is always the listener's.
        p.setProperty("ApplicationName", ChannelListener.APPLICATION_NAME);
        String seconds = Long.toString(Math.max(1, connectTimeout.toSeconds()));
        p.setProperty("connectTimeout", seconds);
        // Bounds every read of the startup and of LISTEN, so an abandoned connect ends instead of leaking a thread
        // (getNotifications and isValid set their own read timeouts while they wait).
        p.setProperty("socketTimeout", seconds);
        p.setProperty("sslResponseTimeout", Long.toString(Math.max(1, connectTimeout.toMillis())));
        p.setProperty("tcpKeepAlive", "true");
        this.properties = p;
    }

    /** The URL without the named parameter (pgjdbc lets URL parameters override properties). */
    static String withoutParameter(String jdbcUrl, String name) {
        int q = jdbcUrl.indexOf('?');
        if (q < 0) {
            return jdbcUrl;
        }
        List<String> kept = new ArrayList<>();
        for (String pair : jdbcUrl.substring(q + 1).split("&")) {
            int eq = pair.indexOf('=');
            String key = eq < 0 ? pair : pair.substring(0, eq);
            if (!pair.isEmpty() && !key.equals(name)) {
                kept.add(pair);
            }
        }
        String base = jdbcUrl.substring(0, q);
        return kept.isEmpty() ? base : base + "?" + String.join("&", kept);
    }

    @Override
    public Session open(String channel, Duration heartbeat, Events events) throws SQLException {
        ListenerSupport.checkOpen(channel, heartbeat, events);
        PgSession session = new PgSession(channel, heartbeat, events);
        session.start();
        return session;
    }

    @Override
    public String toString() {
        int q = url.indexOf('?');
        return "PgjdbcListener[" + (q < 0 ? url : url.substring(0, q)) + "]";
    }

    /** One pgjdbc connection, owned by one thread, LISTENing on one channel. */
    private final class PgSession implements Session {
        private final String channel;
        private final long heartbeatNanos;
        private final Events events;
        private final AtomicBoolean closed = new AtomicBoolean();
        private final AtomicBoolean lostReported = new AtomicBoolean();
        private final CompletableFuture<Void> ready = new CompletableFuture<>();
        private final Thread thread;
        private volatile Connection connection;
        private volatile long livenessKey;
        private volatile int backendPid;

        PgSession(String channel, Duration heartbeat, Events events) {
            this.channel = channel;
            this.heartbeatNanos = heartbeat.toNanos();
            this.events = events;
            this.thread = new Thread(this::run, "pgdurable-listener-" + channel);
            this.thread.setDaemon(true);
        }

        @Override
        public long livenessKey() {
            return livenessKey;
        }

        @Override
        public int backendPid() {
            return backendPid;
        }

        void start() throws SQLException {
            thread.start();
            ListenerSupport.awaitConnected(ready, connectTimeout, this::close);
        }

        private void run() {
            Connection c = null;
            try {
                c = DriverManager.getConnection(url, properties);
                connection = c;
                if (closed.get()) {
                    return;
                }
                int pid = ListenerSupport.joinListeners(c, channel);
                long key = livenessLock ? ListenerSupport.takeLivenessLock(c) : 0;
                try (Statement st = c.createStatement()) {
                    st.execute("LISTEN " + NotifyChannel.quoted(channel));
                }
                livenessKey = key;
                backendPid = pid;
                PGConnection pg = c.unwrap(PGConnection.class);
                if (!ready.complete(null)) {
                    return;
                }
                loop(c, pg);
            } catch (SQLException | RuntimeException e) {
                if (!ready.completeExceptionally(e)) {
                    reportLost(e);
                }
            } catch (Error e) {
                ready.completeExceptionally(e);
                throw e;
            } finally {
                if (c != null) {
                    try {
                        c.close();
                    } catch (SQLException | RuntimeException e) {
                        LOG.debug("closing the listener connection for channel {} failed", channel, e);
                    }
                }
            }
        }

        private void loop(Connection c, PGConnection pg) throws SQLException {
            long lastActivity = System.nanoTime();
            while (!closed.get()) {
                long remaining = heartbeatNanos - (System.nanoTime() - lastActivity);
                if (remaining > 0) {
                    int waitMillis = (int) Math.max(1, Math.min(Integer.MAX_VALUE,
                            TimeUnit.NANOSECONDS.toMillis(remaining)));
                    PGNotification[] received = pg.getNotifications(waitMillis);
                    if (received != null && received.length > 0) {
                        lastActivity = System.nanoTime();
                        deliver(received);
                    }
                    continue;
                }
                // Silence for a whole heartbeat: make sure the link is alive.
                if (!c.isValid(VALIDATION_TIMEOUT_SECONDS)) {
                    reportLost(new SQLException("the listener connection did not answer within "
                            + VALIDATION_TIMEOUT_SECONDS + " s (heartbeat)", "08006"));
                    return;
                }
                lastActivity = System.nanoTime();
            }
        }

        private void deliver(PGNotification[] received) {
            for (PGNotification n : received) {
                if (closed.get()) {
                    return;
                }
                if (!channel.equals(n.getName())) {
                    continue;
                }
                try {
                    events.notification(n.getParameter());
                } catch (RuntimeException e) {
                    LOG.debug("notification handler for channel {} failed", channel, e);
                }
            }
        }

        private void reportLost(Throwable cause) {
            if (closed.get() || !lostReported.compareAndSet(false, true)) {
                return;
            }
            try {
                events.lost(cause);
            } catch (RuntimeException e) {
                LOG.debug("loss handler for channel {} failed", channel, e);
            }
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            ready.completeExceptionally(new SQLException("closed", "08003"));
            if (Thread.currentThread() == thread) {
                return; // the loop ends by itself and closes the connection
            }
            thread.interrupt();
            Connection c = connection;
            if (c == null) {
                // Still connecting: the thread sees the flag and closes whatever it gets; nothing to wait for.
                return;
            }
            try {
                // Closes the socket from another thread: the blocked read fails and the thread ends.
                c.abort(command -> {
                    Thread aborter = new Thread(command, "pgdurable-listener-abort-" + channel);
                    aborter.setDaemon(true);
                    aborter.start();
                });
            } catch (SQLException | RuntimeException e) {
                LOG.debug("aborting the listener connection for channel {} failed", channel, e);
            }
            try {
                thread.join(CLOSE_WAIT_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                LOG.debug("listener thread for channel {} did not end within {} ms; abandoned", channel,
                        CLOSE_WAIT_MILLIS);
            }
        }
    }
}
