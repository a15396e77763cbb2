package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.internal.longpoll.WorkScanner;
import io.pgdurable.longpoll.QueueKind;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers long polling's read-only questions with the provider's own statements: a one-statement probe of what is
 * claimable now, and timer scans in READ ONLY transactions whose lock and statement timeouts are set with
 * {@code SET LOCAL} semantics, so a scan stuck behind a lock is cancelled by the server, rolls back and gives its
 * connection back instead of piling up.
 */
final class PostgresWorkScanner implements WorkScanner {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresWorkScanner.class);

    private final DataSource pool;
    private final Statements sql;
    private final String timeoutMs;

    PostgresWorkScanner(DataSource pool, Statements sql, Duration scanTimeout) {
        this.pool = pool;
        this.sql = sql;
        this.timeoutMs = Long.toString(scanTimeout.toMillis());
    }

    @Override
    public List<Hint> probe(long nowMs) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql.claimableNow)) {
            ps.setLong(1, nowMs);
            return read(ps);
        } catch (SQLException e) {
            LOG.debug("pgdurable: fallback probe failed: {}", e.getMessage());
            return List.of();
        }
    }

    @Override
    public List<Hint> scan(long nowMs, int limit) {
        try (Connection c = pool.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setReadOnly(true);
            c.setAutoCommit(false);
            try {
                try (PreparedStatement timeouts = c.prepareStatement(sql.setLocalScanTimeouts)) {
                    timeouts.setString(1, timeoutMs);
                    timeouts.setString(2, timeoutMs);
                    timeouts.execute();
                }
                List<Hint> hints;
                try (PreparedStatement ps = c.prepareStatement(sql.nextDeadlines)) {
                    ps.setLong(1, nowMs);
                    ps.setInt(2, limit);
                    hints = read(ps);
                }
                c.commit();
                return hints;
            } catch (SQLException e) {
                c.rollback();
                if ("57014".equals(e.getSQLState()) || "55P03".equals(e.getSQLState())) {
                    return null; // cancelled by the server's lock or statement timeout
                }
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
                c.setReadOnly(false);
            }
        } catch (SQLException e) {
            LOG.debug("pgdurable: timer scan failed: {}", e.getMessage());
            return null;
        }
    }

    private static List<Hint> read(PreparedStatement ps) throws SQLException {
        List<Hint> hints = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                QueueKind queue = "o".equals(rs.getString(1)) ? QueueKind.ORCHESTRATOR : QueueKind.WORKER;
                long n = rs.getLong(3);
                Array tagArray = rs.getArray(5);
                Set<String> tags = tagArray == null ? null : Set.of((String[]) tagArray.getArray());
                hints.add(new Hint(queue, rs.getLong(2), (int) Math.min(n, Integer.MAX_VALUE), rs.getBoolean(4),
                        tags, rs.getBoolean(6), 0));
            }
        }
        return hints;
    }
}
