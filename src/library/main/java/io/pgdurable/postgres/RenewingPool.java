package io.pgdurable.postgres;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import com.zaxxer.hikari.pool.HikariPool;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The provider's own connection pool, replaced by a fresh one as soon as the server is back after an outage.
 *
 * <p>HikariCP re-adds lost connections with a backoff that doubles up to 5 s, so after an outage of a few seconds
 * or more its pool stays empty for up to 5 s after the server returned (measured: the first enqueue succeeded about
 * 5 s after a 5 s outage ended). Here, while the pool holds no connection at all, a borrower first checks whether
 * the server answers with one direct connection — one borrower at a time, at most once per
 * {@value #PROBE_INTERVAL_MILLIS} ms, so an outage costs at most two connection attempts a second however many
 * threads call. When it answers, a fresh pool (built by the same code as the first) takes over at once. The old
 * pool keeps serving the waiters it already has (its own retries may still connect them) and is closed once its
 * connection timeout has passed, so those waiters end as they would have, with a retryable timeout.
 */
final class RenewingPool implements DataSource, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RenewingPool.class);
    static final long PROBE_INTERVAL_MILLIS = 500;
    static final long EMPTY_POOL_SLICE_MILLIS = 250;

    private final Supplier<HikariDataSource> opener;
    private final DataSource direct;
    private final long timeoutNanos;
    private final long retireAfterNanos;
    private final ReentrantLock renewing = new ReentrantLock();
    private final List<Retired> retired = new CopyOnWriteArrayList<>();
    private final AtomicLong probes = new AtomicLong();
    private final AtomicLong renewals = new AtomicLong();
    private volatile HikariDataSource current;
    private volatile boolean closed;
    private long lastProbeNanos; // guarded by renewing

    /**
     * @param opener builds a pool; called once here and again for each renewal
     * @param direct connects without the pool, for the "is the server back?" question
     * @param connectionTimeoutMillis the pools' connection timeout: how long a borrow waits, and so how long a
     *        replaced pool stays open for the waiters it has
     */
    RenewingPool(Supplier<HikariDataSource> opener, DataSource direct, long connectionTimeoutMillis) {
        this.opener = opener;
        this.direct = direct;
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(connectionTimeoutMillis);
        this.retireAfterNanos = TimeUnit.MILLISECONDS.toNanos(connectionTimeoutMillis + 1_000);
        this.current = opener.get();
        this.lastProbeNanos = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(PROBE_INTERVAL_MILLIS);
    }

    @Override
    public Connection getConnection() throws SQLException {
        HikariDataSource pool = current;
        HikariPoolMXBean state = pool.getHikariPoolMXBean();
        if (state == null || state.getTotalConnections() > 0 || closed) {
            return pool.getConnection();
        }
        return borrowWhileEmpty(pool);
    }

    /**
     * A borrow from an empty pool waits in slices of {@value #EMPTY_POOL_SLICE_MILLIS} ms, asking between slices
     * whether the server is back, so a borrower that arrived during the outage moves to the new pool as soon as
     * there is one; it still gives up after the connection timeout, as a plain borrow would.
     */
    private Connection borrowWhileEmpty(HikariDataSource pool) throws SQLException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            pool = renewIfServerIsBack(pool);
            if (!(pool.getHikariPoolMXBean() instanceof HikariPool hikari)) {
                return pool.getConnection();
            }
            long leftMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            boolean empty = hikari.getTotalConnections() == 0;
            try {
                return hikari.getConnection(Math.max(1, empty ? Math.min(leftMillis, EMPTY_POOL_SLICE_MILLIS)
                        : leftMillis));
            } catch (SQLTransientConnectionException timedOut) {
                if (!empty || System.nanoTime() - deadline >= 0 || closed) {
                    throw timedOut;
                }
            }
        }
    }

    /** Direct connection attempts made to learn whether the server is back (tests: no storm while it is down). */
    long probes() {
        return probes.get();
    }

    /** Pools replaced because the server came back while the pool was empty. */
    long renewals() {
        return renewals.get();
    }

    /** The pool in use now (its size and metrics). */
    HikariDataSource current() {
        return current;
    }

    private HikariDataSource renewIfServerIsBack(HikariDataSource empty) {
        if (!renewing.tryLock()) {
            return current; // another borrower is asking; this one waits in the pool as usual
        }
        try {
            closeRetiredPools(false);
            long now = System.nanoTime();
            if (current != empty || now - lastProbeNanos < TimeUnit.MILLISECONDS.toNanos(PROBE_INTERVAL_MILLIS)) {
                return current;
            }
            lastProbeNanos = now;
            probes.incrementAndGet();
            try (Connection probe = direct.getConnection()) {
                probe.isValid(1);
            } catch (SQLException | RuntimeException stillDown) {
                LOG.debug("pgdurable: the connection pool is empty and the server does not answer yet: {}",
                        stillDown.getMessage());
                return current;
            }
            HikariDataSource fresh;
            try {
                fresh = opener.get();
            } catch (RuntimeException failed) {
                LOG.debug("pgdurable: the server answered but a new connection pool could not start: {}",
                        failed.getMessage());
                return current;
            }
            retired.add(new Retired(empty, System.nanoTime() + retireAfterNanos));
            current = fresh;
            if (closed) {
                fresh.close(); // close() ran meanwhile and may have closed only the pool before this one
                return fresh;
            }
            renewals.incrementAndGet();
            LOG.info("pgdurable: the database answers again; the connection pool, empty since the connections "
                    + "were lost, was replaced by a new one");
            return fresh;
        } finally {
            renewing.unlock();
        }
    }

    /** Closes the replaced pools whose waiters have timed out (all of them with {@code all}). */
    private void closeRetiredPools(boolean all) {
        long now = System.nanoTime();
        for (Retired r : retired) {
            if (all || now - r.closeAtNanos >= 0) {
                r.pool.close();
                retired.remove(r);
            }
        }
    }

    /** Never waits for a probe in flight: a renewal that finishes after this closes its own new pool. */
    @Override
    public void close() {
        closed = true;
        closeRetiredPools(true);
        current.close();
    }

    private record Retired(HikariDataSource pool, long closeAtNanos) {}

    // ------------------------------------------------------------------------------------------ DataSource plumbing

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("the provider's pool connects with its configured credentials");
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
        return current.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
        current.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
        current.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
        return current.getLoginTimeout();
    }

    @Override
    public java.util.logging.Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        if (iface.isInstance(this)) {
            return iface.cast(this);
        }
        return current.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
        return iface.isInstance(this) || current.isWrapperFor(iface);
    }
}
