package io.pgdurable.internal.longpoll;

import com.impossibl.postgres.api.jdbc.PGConnection;
import com.impossibl.postgres.api.jdbc.PGNotificationListener;
import io.pgdurable.longpoll.ChannelListener;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The default {@link NotificationListener}: a dedicated pgjdbc-ng connection whose asynchronous listener delivers a
 * NOTIFY in about 0.1 ms (docs/decisions.md, "The JDBC drivers").
 *
 * <ul>
 *   <li>The constructor takes the provider's pgjdbc URL ({@code jdbc:postgresql://host:port/db?user=..&password=..})
 *       and converts it to pgjdbc-ng's {@code jdbc:pgsql://host:port/db} with the credentials (and the SSL settings
 *       both drivers know) as connection properties. The URL and the password are never logged.</li>
 *   <li>A session holds a strong reference to its connection for its whole life: pgjdbc-ng's housekeeper closes
 *       connections that are only weakly reachable (pgjdbc-ng #517).</li>
 *   <li>Neither driver notices a half-open socket, so each session runs a heartbeat on a daemon thread of its own:
 *       after {@code heartbeat} without any notification it calls {@code isValid(2)}; {@code false} or an exception
 *       reports the loss. A dead link is therefore found within {@code heartbeat} + 2 s.</li>
 *   <li>Connecting and LISTEN are bounded by a connect timeout (pgjdbc-ng has none of its own when used through
 *       {@link DriverManager}). A timed-out {@code open} leaves the driver's connect running, and the next
 *       {@code open} takes its connection rather than starting a second connect beside it; a connection nobody
 *       takes is closed after 10 s.</li>
 * </ul>
 *
 * <p>Measured driver behaviour worth knowing (pgjdbc-ng 0.8.9): with any SSL mode other than {@code disable}, a
 * server or proxy that accepts the TCP connection and closes it during the SSL request makes the driver wait its
 * internal 60 s before failing (with {@code disable} it fails at once), and a server that never answers is given up
 * after 60 s. The connect timeout bounds {@link #open} regardless; an abandoned attempt ends on its own within about
 * a minute. The SSL mode follows the pgjdbc URL ({@code prefer} when it says nothing, as pgjdbc does): set
 * {@code sslmode=disable} on a trusted local link to avoid the first case. The driver also logs each lost connection
 * once through {@code java.util.logging} ({@code com.impossibl.postgres}).
 */
public final class PgjdbcNgListener implements NotificationListener {
    private static final Logger LOG = LoggerFactory.getLogger(PgjdbcNgListener.class);
    /**
     * pgjdbc-ng logs every lost connection through java.util.logging, outside our rate limits. Unless the
     * application configured that logger itself, keep it to severe messages (held strongly so the level sticks).
     */
    private static final java.util.logging.Logger DRIVER_LOG = quietDriverLog();

    private static java.util.logging.Logger quietDriverLog() {
        java.util.logging.Logger driver = java.util.logging.Logger.getLogger("com.impossibl.postgres");
        if (driver.getLevel() == null) {
            driver.setLevel(java.util.logging.Level.SEVERE);
        }
        return driver;
    }

    static final int VALIDATION_TIMEOUT_SECONDS = 2;
    private static final long CLOSE_WAIT_MILLIS = 800;
    private static final String LISTENER_NAME = "pgdurable";

    private final String url;
    private final Properties properties;
    private final Duration connectTimeout;
    private final boolean livenessLock;
    /**
     * Attempts in a row that ran out of time. pgjdbc-ng loads the server's type catalogue on the connecting thread
     * when it first meets a server (also a restarted one): more than 10 s on a loaded 2-core machine, so a fixed
     * budget could fail every attempt. Each timeout doubles the next attempt's budget, up to 8 × connectTimeout; a
     * success resets it.
     */
    private final java.util.concurrent.atomic.AtomicInteger timeoutsInARow =
            new java.util.concurrent.atomic.AtomicInteger();
    /**
     * The driver connect under way, shared by the sessions that wait for it. A session that gives up on it leaves it
     * running here, and the next session takes its connection instead of starting a second connect beside it: under
     * load two catalogue loads in parallel each took longer than one alone, so abandoning and restarting never
     * caught up (ServerRestartTest once saw no LISTEN within 90 s). A finished connect nobody takes is closed after
     * {@link #UNCLAIMED_MILLIS}.
     */
    private final AtomicReference<Connect> connecting = new AtomicReference<>();
    private static final long UNCLAIMED_MILLIS = 10_000;
    private static final long CONNECT_SLICE_MILLIS = 100;
    /**
     * Set once a connect of this listener succeeded. Before that a connect may be slow (the driver's first connect in
     * a JVM loads netty and the type catalogue: 2.7 s on a quiet machine, over 5 s under load) and is waited for up
     * to four connect timeouts; after it, a connect to a live server takes 60-220 ms, so one that has run a whole
     * connect timeout is stuck, not slow. Seen in CI (ServerRestartTest): a connect begun while the server was
     * stopping neither failed nor finished, and the listener came back only when a fresh connect replaced it 35 s
     * later.
     */
    private volatile boolean warm;

    /** The arguments as {@link PgjdbcListener#PgjdbcListener(String, Duration, boolean)} takes them. */
    public PgjdbcNgListener(String jdbcUrl, Duration connectTimeout, boolean livenessLock) {
        this.livenessLock = livenessLock;
        Target target = convert(jdbcUrl);
        this.url = target.url();
        this.properties = target.properties();
        this.connectTimeout = ListenerSupport.requirePositive(connectTimeout, "connectTimeout");
    }

    /** The pgjdbc-ng URL and connection properties for a pgjdbc URL (the properties hold the password). */
    record Target(String url, Properties properties) {
        @Override
        public String toString() {
            return "Target[" + url + "]";
        }
    }

    /**
     * Converts a pgjdbc URL. Understood: {@code jdbc:postgresql://host[:port][,host[:port]...]/database},
     * {@code jdbc:postgresql:database}, IPv6 hosts in brackets, and the parameters {@code user}, {@code password},
     * {@code sslmode}, {@code ssl=true}, {@code sslrootcert}, {@code sslcert}, {@code sslkey}, {@code sslpassword}.
     * Other parameters are pgjdbc-specific and are left out. Errors never quote the URL (it may hold a password).
     */
    static Target convert(String jdbcUrl) {
        ListenerSupport.requirePgjdbcUrl(jdbcUrl);
        String rest = jdbcUrl.substring(ListenerSupport.PGJDBC_PREFIX.length());
        String query = "";
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        String hosts;
        String database;
        if (rest.startsWith("//")) {
            String hostAndDb = rest.substring(2);
            int slash = hostAndDb.indexOf('/');
            hosts = slash < 0 ? hostAndDb : hostAndDb.substring(0, slash);
            database = slash < 0 ? "" : hostAndDb.substring(slash + 1);
        } else {
            hosts = "";
            database = rest.startsWith("/") ? rest.substring(1) : rest;
        }
        Map<String, String> params = parseQuery(query);
        database = decode(database);
        String user = params.get("user");
        if (database.isEmpty()) {
            // pgjdbc's default database is the user's name; pgjdbc-ng requires one in the URL.
            if (user == null || user.isEmpty()) {
                throw new IllegalArgumentException("the listener URL names neither a database nor a user");
            }
            database = user;
        }
        StringBuilder ng = new StringBuilder("jdbc:pgsql://").append(normaliseHosts(hosts)).append('/');
        ng.append(java.net.URLEncoder.encode(database, StandardCharsets.UTF_8).replace("+", "%20"));

        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        String password = params.get("password");
        if (password != null) {
            props.setProperty("password", password);
        }
        String sslMode = params.get("sslmode");
        if (sslMode == null && "true".equalsIgnoreCase(params.get("ssl"))) {
            sslMode = "verify-full"; // pgjdbc's meaning of ssl=true
        }
        // pgjdbc defaults to "prefer"; pgjdbc-ng would default to "disable".
        props.setProperty("ssl.mode", sslMode == null ? "prefer" : sslMode.toLowerCase(java.util.Locale.ROOT));
        copy(params, "sslrootcert", props, "ssl.ca.certificate.file");
        copy(params, "sslcert", props, "ssl.certificate.file");
        copy(params, "sslkey", props, "ssl.key.file");
        copy(params, "sslpassword", props, "ssl.key.password");
        props.setProperty("application.name", ChannelListener.APPLICATION_NAME);
        return new Target(ng.toString(), props);
    }

    private static void copy(Map<String, String> params, String from, Properties props, String to) {
        String v = params.get(from);
        if (v != null) {
            props.setProperty(to, v);
        }
    }

    private static Map<String, String> parseQuery(String query) {
        Map<String, String> params = new LinkedHashMap<>();
        if (query.isEmpty()) {
            return params;
        }
        for (String pair : query.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String key = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : pair.substring(eq + 1);
            params.put(decode(key), decode(value));
        }
        return params;
    }

    private static String decode(String s) {
        try {
            return URLDecoder.decode(s, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the listener URL has a malformed %-escape");
        }
    }

    private static String normaliseHosts(String hosts) {
        if (hosts.isEmpty()) {
            return "localhost:5432";
        }
        List<String> out = new ArrayList<>();
        for (String h : hosts.split(",")) {
            if (h.isEmpty()) {
                continue;
            }
            boolean hasPort = h.startsWith("[") ? h.indexOf("]:") > 0 : h.contains(":");
            out.add(hasPort ? h : h + ":5432");
        }
        if (out.isEmpty()) {
            return "localhost:5432";
        }
        return String.join(",", out);
    }

    @Override
    public Session open(String channel, Duration heartbeat, Events events) throws SQLException {
        ListenerSupport.checkOpen(channel, heartbeat, events);
        NgSession session = new NgSession(channel, heartbeat, events);
        session.start();
        return session;
    }

    @Override
    public String toString() {
        return "PgjdbcNgListener[" + url + "]";
    }

    /** One driver connect; its connection goes to exactly one taker (a session, or the reaper that closes it). */
    private static final class Connect {
        final CompletableFuture<Connection> result = new CompletableFuture<>();
        final long startedNanos = System.nanoTime();
        private final AtomicBoolean taken = new AtomicBoolean();

        boolean take() {
            return taken.compareAndSet(false, true);
        }
    }

    /**
     * The connect under way, or a new one started on a daemon thread of its own. A stale connect (see
     * {@link #stale}) is not waited for any longer (it may be stuck on a link that has since recovered, which the
     * driver gives up only after 60 s): a fresh one replaces it, and the old one's connection, should it come, is
     * closed unclaimed.
     */
    private Connect sharedConnect() {
        while (true) {
            Connect current = connecting.get();
            if (current != null && !stale(current)) {
                return current;
            }
            Connect fresh = new Connect();
            if (connecting.compareAndSet(current, fresh)) {
                Thread t = new Thread(() -> runConnect(fresh), "pgdurable-listener-driver-connect");
                t.setDaemon(true);
                t.start();
                return fresh;
            }
        }
    }

    /** Unfinished past what a connect may take: four connect timeouts before the first success, one after it. */
    private boolean stale(Connect attempt) {
        long limit = connectTimeout.toNanos() * (warm ? 1 : 4);
        return !attempt.result.isDone() && System.nanoTime() - attempt.startedNanos >= limit;
    }

    private void runConnect(Connect attempt) {
        Connection raw;
        try {
            raw = DriverManager.getConnection(url, properties);
        } catch (Throwable e) {
            connecting.compareAndSet(attempt, null); // the next session starts afresh
            attempt.result.completeExceptionally(e);
            return;
        }
        warm = true;
        attempt.result.complete(raw);
        // Nobody may come for it (the notifier was closed): close it if it is still there after a while.
        CompletableFuture.delayedExecutor(UNCLAIMED_MILLIS, TimeUnit.MILLISECONDS).execute(() -> {
            if (attempt.take()) {
                connecting.compareAndSet(attempt, null);
                try {
                    raw.close();
                } catch (SQLException | RuntimeException e) {
                    LOG.debug("closing an unclaimed listener connection failed", e);
                }
            }
        });
    }

    /** One pgjdbc-ng connection LISTENing on one channel. */
    private final class NgSession implements Session, PGNotificationListener {
        private final String channel;
        private final long heartbeatNanos;
        private final Events events;
        private final AtomicBoolean closed = new AtomicBoolean();
        private final AtomicBoolean lostReported = new AtomicBoolean();
        private final AtomicReference<Throwable> pendingLoss = new AtomicReference<>();
        private final ScheduledThreadPoolExecutor heartbeat;
        private volatile boolean opened;
        /** The strong reference that keeps pgjdbc-ng's housekeeper away from the connection. */
        private volatile PGConnection connection;
        private volatile long lastActivityNanos;
        private volatile long livenessKey;
        private volatile int backendPid;

        NgSession(String channel, Duration heartbeat, Events events) {
            this.channel = channel;
            this.heartbeatNanos = heartbeat.toNanos();
            this.events = events;
            this.heartbeat = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "pgdurable-listener-heartbeat-" + channel);
                t.setDaemon(true);
                return t;
            });
            this.heartbeat.setRemoveOnCancelPolicy(true);
            this.heartbeat.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
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
            CompletableFuture<PGConnection> ready = new CompletableFuture<>();
            Thread opener = new Thread(() -> connect(ready), "pgdurable-listener-connect-" + channel);
            opener.setDaemon(true);
            opener.start();
            Duration budget = connectTimeout.multipliedBy(1L << Math.min(3, timeoutsInARow.get()));
            try {
                ListenerSupport.awaitConnected(ready, budget, () -> abandon(ready));
            } catch (java.sql.SQLTimeoutException slow) {
                timeoutsInARow.incrementAndGet();
                throw slow;
            }
            timeoutsInARow.set(0);
            lastActivityNanos = System.nanoTime();
            opened = true;
            if (pendingLoss.get() != null) {
                deliverLoss();
                return;
            }
            scheduleBeat(heartbeatNanos);
        }

        /** Runs on the opener thread: take a connection from the shared connect, register the listener, LISTEN. */
        private void connect(CompletableFuture<PGConnection> ready) {
            PGConnection c = null;
            try {
                Connection raw = takeConnection(ready);
                if (raw == null) {
                    return; // abandoned while connecting; the connection stays for the next session
                }
                c = raw.unwrap(PGConnection.class);
                connection = c;
                if (ready.isDone()) {
                    closeQuietly(c); // abandoned between taking the connection and now
                    return;
                }
                // Register before LISTEN, so nothing between the two is missed.
                c.addNotificationListener(LISTENER_NAME, Pattern.quote(channel), this);
                int pid = ListenerSupport.joinListeners(raw, channel);
                long key = livenessLock ? ListenerSupport.takeLivenessLock(raw) : 0;
                try (Statement st = c.createStatement()) {
                    st.execute("LISTEN " + NotifyChannel.quoted(channel));
                }
                livenessKey = key;
                backendPid = pid;
                if (!ready.complete(c)) {
                    closeQuietly(c);
                }
            } catch (Throwable t) {
                ready.completeExceptionally(t);
                if (c != null) {
                    closeQuietly(c);
                }
            }
        }

        /**
         * Waits for the shared connect and takes its connection; returns null when the session was abandoned
         * meanwhile (the connect then goes on for the next session).
         */
        private Connection takeConnection(CompletableFuture<PGConnection> ready) throws SQLException {
            attempts:
            while (true) {
                Connect attempt = sharedConnect();
                Connection raw = null;
                while (raw == null) {
                    if (ready.isDone()) {
                        return null;
                    }
                    try {
                        raw = attempt.result.get(CONNECT_SLICE_MILLIS, TimeUnit.MILLISECONDS);
                    } catch (java.util.concurrent.TimeoutException slice) {
                        if (stale(attempt)) {
                            continue attempts; // a fresh connect replaces it
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new SQLException("interrupted while the listener was connecting", "08001", e);
                    } catch (java.util.concurrent.ExecutionException e) {
                        throw ListenerSupport.connectFailure(e.getCause());
                    }
                }
                if (attempt.take()) {
                    connecting.compareAndSet(attempt, null);
                    return raw;
                }
                // Taken by another session or closed unclaimed: connect again.
            }
        }

        private void abandon(CompletableFuture<PGConnection> ready) {
            closed.set(true);
            heartbeat.shutdownNow();
            if (!ready.completeExceptionally(new SQLException("abandoned", "08001"))) {
                // It completed meanwhile (successfully or not): make sure a connection does not leak.
                PGConnection c = connection;
                if (c != null) {
                    closeInBackground(c);
                }
            }
        }

        @Override
        public void notification(int processId, String channelName, String payload) {
            if (closed.get()) {
                return;
            }
            lastActivityNanos = System.nanoTime();
            try {
                events.notification(payload);
            } catch (RuntimeException e) {
                LOG.debug("notification handler for channel {} failed", channel, e);
            }
        }

        @Override
        public void closed() {
            reportLost(new SQLException("the listener connection was closed (by the server or the network)",
                    "08006"));
        }

        private void scheduleBeat(long delayNanos) {
            if (closed.get() || lostReported.get()) {
                return;
            }
            try {
                heartbeat.schedule(this::beat, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // shut down by close(): nothing to do
            }
        }

        private void beat() {
            if (closed.get() || lostReported.get()) {
                return;
            }
            long idle = System.nanoTime() - lastActivityNanos;
            if (idle < heartbeatNanos) {
                scheduleBeat(heartbeatNanos - idle);
                return;
            }
            PGConnection c = connection;
            boolean valid;
            Throwable error = null;
            try {
                valid = c.isValid(VALIDATION_TIMEOUT_SECONDS);
            } catch (SQLException | RuntimeException e) {
                valid = false;
                error = e;
            }
            if (closed.get()) {
                return;
            }
            if (!valid) {
                reportLost(error != null ? error
                        : new SQLException("the listener connection did not answer within "
                                + VALIDATION_TIMEOUT_SECONDS + " s (heartbeat)", "08006"));
                return;
            }
            lastActivityNanos = System.nanoTime();
            scheduleBeat(heartbeatNanos);
        }

        private void reportLost(Throwable cause) {
            if (closed.get()) {
                return;
            }
            pendingLoss.compareAndSet(null, cause);
            if (opened) {
                deliverLoss();
            }
        }

        private void deliverLoss() {
            if (closed.get() || !lostReported.compareAndSet(false, true)) {
                return;
            }
            heartbeat.shutdown();
            try {
                events.lost(pendingLoss.get());
            } catch (RuntimeException e) {
                LOG.debug("loss handler for channel {} failed", channel, e);
            }
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            heartbeat.shutdownNow();
            PGConnection c = connection;
            if (c == null) {
                return;
            }
            Thread closer = closeInBackground(c);
            try {
                closer.join(CLOSE_WAIT_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (closer.isAlive()) {
                LOG.debug("listener connection for channel {} did not close within {} ms; abandoned", channel,
                        CLOSE_WAIT_MILLIS);
            }
        }

        private Thread closeInBackground(PGConnection c) {
            Thread closer = new Thread(() -> {
                try {
                    c.removeNotificationListener(LISTENER_NAME);
                } catch (RuntimeException ignored) {
                    // closing anyway
                }
                closeQuietly(c);
            }, "pgdurable-listener-close-" + channel);
            closer.setDaemon(true);
            closer.start();
            return closer;
        }

        private void closeQuietly(Connection c) {
            try {
                c.close();
            } catch (SQLException | RuntimeException e) {
                LOG.debug("closing the listener connection for channel {} failed", channel, e);
            }
        }
    }
}
