package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Types;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one operation on a pooled connection and turns its {@link SQLException} into a classified
 * {@link ProviderException}; owns the provider's closed flag, so every caller refuses work the same way once the
 * provider is closed. Also holds the small JDBC helpers the operations share.
 */
final class SqlRunner {
    // The provider's logger name, as before these classes were split out, so logging configuration still applies.
    private static final Logger LOG = LoggerFactory.getLogger(SqlRunner.class);

    @FunctionalInterface
    interface SqlWork<T> {
        T run(Connection c) throws SQLException;
    }

    private final DataSource dataSource;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final ProviderMetrics.Observer observer;
    /** False without metrics: then no call reads the clock or looks its operation up. */
    private final boolean observed;

    SqlRunner(DataSource dataSource) {
        this(dataSource, ProviderMetrics.Observer.NONE);
    }

    SqlRunner(DataSource dataSource, ProviderMetrics.Observer observer) {
        this.dataSource = dataSource;
        this.observer = observer;
        this.observed = observer != ProviderMetrics.Observer.NONE;
    }

    DataSource dataSource() {
        return dataSource;
    }

    boolean closed() {
        return closed.get();
    }

    /** Marks the provider closed; true only for the call that closed it. */
    boolean markClosed() {
        return closed.compareAndSet(false, true);
    }

    /**
     * Runs one operation on a pooled connection and classifies its failure. A call that failed because a stored
     * function was replaced under it (0A000) is re-run once: the statement rolled back, so re-running is safe.
     */
    <T> T call(String op, SqlWork<T> work) {
        if (closed.get()) {
            throw ProviderException.permanent(op, "the provider is closed");
        }
        return run(op, work);
    }

    /** {@link #call} without the closed check: the ack flusher drains its buffer while the provider closes. */
    <T> T run(String op, SqlWork<T> work) {
        if (!observed) {
            return attempt(op, work);
        }
        long start = System.nanoTime();
        T result;
        try {
            result = attempt(op, work);
        } catch (RuntimeException e) {
            ended(op, start, e);
            throw e;
        }
        ended(op, start, null);
        return result;
    }

    /** When a timed call starts: {@link System#nanoTime()} with metrics, 0 (no clock read) without. */
    long startTimer() {
        return observed ? System.nanoTime() : 0;
    }

    /** Reports a call that started at {@code start} ({@link #startTimer}); {@code failure} null when it succeeded. */
    void ended(String op, long start, RuntimeException failure) {
        if (!observed) {
            return;
        }
        ProviderMetrics.Operation timed = ProviderMetrics.Operation.of(op);
        if (timed != null) {
            ProviderMetrics.Outcome outcome = failure == null ? ProviderMetrics.Outcome.OK
                    : failure instanceof ProviderException p && p.retryable() ? ProviderMetrics.Outcome.RETRYABLE
                    : ProviderMetrics.Outcome.PERMANENT;
            observer.operationEnded(timed, outcome, System.nanoTime() - start);
        }
    }

    private <T> T attempt(String op, SqlWork<T> work) {
        for (int attempt = 1; ; attempt++) {
            try (Connection c = dataSource.getConnection()) {
                return work.run(c);
            } catch (SQLException e) {
                if (attempt == 1 && SqlErrors.CACHED_PLAN_CHANGED.equals(e.getSQLState())) {
                    LOG.debug("pgdurable: {} re-run after a function was replaced: {}", op, e.getMessage());
                    continue;
                }
                throw SqlErrors.translate(op, e);
            }
        }
    }

    static String newToken() {
        return "lock_" + UUID.randomUUID();
    }

    static void setLongOrNull(PreparedStatement ps, int index, Long value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.BIGINT);
        } else {
            ps.setLong(index, value);
        }
    }

    static int singleInt(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    static String[] strings(Array array) throws SQLException {
        return array == null ? new String[0] : (String[]) array.getArray();
    }

    static Long[] longs(Array array) throws SQLException {
        return array == null ? new Long[0] : (Long[]) array.getArray();
    }

    static void logWarnings(SQLWarning warning) {
        for (SQLWarning w = warning; w != null; w = w.getNextWarning()) {
            LOG.warn("{}", w.getMessage());
        }
    }
}
