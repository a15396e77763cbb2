package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lock-token operations of both queues: abandon (release, optionally delayed) and renew a lease. Each is one
 * function call with the token, the application time and a duration in milliseconds (abandon adds whether the
 * attempt counts); the queues differ only in operation name and statement.
 */
final class Leases {
    // The provider's logger name, as before these classes were split out, so logging configuration still applies.
    private static final Logger LOG = LoggerFactory.getLogger(PostgresProvider.class);

    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;

    Leases(SqlRunner db, Statements sql, Clock clock) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
    }

    void abandonOrchestrationItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        abandon("abandonOrchestrationItem", sql.abandonOrchestrationItem, lockToken, delay, ignoreAttempt);
    }

    void renewOrchestrationItemLock(String lockToken, Duration extendFor) {
        renew("renewOrchestrationItemLock", sql.renewOrchestrationItemLock, lockToken, extendFor);
    }

    void abandonWorkItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        abandon("abandonWorkItem", sql.abandonWorkItem, lockToken, delay, ignoreAttempt);
    }

    void renewWorkItemLock(String lockToken, Duration extendFor) {
        renew("renewWorkItemLock", sql.renewWorkItemLock, lockToken, extendFor);
    }

    /** A fetch that throws must hold no lock: gives an undecodable orchestrator batch back before the error. */
    void releaseUndecodableOrchestration(String token) {
        releaseQuietly(() -> abandonOrchestrationItem(token, null, false),
                "pgdurable: could not release the lock of an undecodable batch; it expires on its own: {}");
    }

    /** A fetch hands out only what it can decode: releases an undecodable worker item (its attempt counted). */
    void releaseUndecodableWorkItem(String token) {
        releaseQuietly(() -> abandonWorkItem(token, null, false),
                "pgdurable: could not release an undecodable work item; its lease expires on its own: {}");
    }

    /** The lease expires on its own, so a failed release is only logged: the caller reports the real error. */
    private static void releaseQuietly(Runnable release, String warning) {
        try {
            release.run();
        } catch (ProviderException e) {
            LOG.warn(warning, e.getMessage());
        }
    }

    private void abandon(String op, String statement, String lockToken, Duration delay, boolean ignoreAttempt) {
        Payloads.notNull(op, "lockToken", lockToken);
        long delayMs = Payloads.delayMillis(op, delay);
        tokenCall(op, statement, lockToken, delayMs, ignoreAttempt);
    }

    private void renew(String op, String statement, String lockToken, Duration extendFor) {
        Payloads.notNull(op, "lockToken", lockToken);
        long extendMs = Payloads.positiveMillis(op, "extendFor", extendFor);
        tokenCall(op, statement, lockToken, extendMs, null);
    }

    /** {@code statement(token, now, millis[, ignoreAttempt])}; the flag is bound only when given. */
    private void tokenCall(String op, String statement, String lockToken, long millis, Boolean ignoreAttempt) {
        long now = clock.millis();
        db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(statement)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setLong(3, millis);
                if (ignoreAttempt != null) {
                    ps.setBoolean(4, ignoreAttempt);
                }
                ps.execute();
                return null;
            }
        });
    }
}
