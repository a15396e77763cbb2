package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.spi.ProviderException;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.function.ObjLongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lock-token operations of both queues: abandon (release, optionally delayed) and renew a lease. Each is one
 * function call with the token, the application time and a duration in milliseconds (abandon adds whether the
 * attempt counts); the queues differ only in operation name and statement.
 */
final class Leases {
    private static final Logger LOG = LoggerFactory.getLogger(Leases.class);

    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final ObjLongConsumer<List<Hint>> announce;

    Leases(SqlRunner db, Statements sql, Clock clock, ObjLongConsumer<List<Hint>> announce) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.announce = announce;
    }

    /**
     * The released batch is claimable at {@code now + delay}; messages that arrived during the turn are claimable
     * at once, whatever the delay (whether any did is not known here, so a delayed abandon announces both times).
     */
    /** Returns the time of the call (application clock, ms). */
    long abandonOrchestrationItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        Done d = abandon("abandonOrchestrationItem", sql.abandonOrchestrationItem, lockToken, delay, ignoreAttempt);
        announce.accept(d.millis() > 0 ? Announcements.all(Announcements.orchestratorMessage(d.now()),
                Announcements.orchestratorMessage(d.end())) : Announcements.orchestratorMessage(d.now()), d.now());
        return d.now();
    }

    /** Returns the new end of the lease (application clock, ms). */
    long renewOrchestrationItemLock(String lockToken, Duration extendFor) {
        Done d = renew("renewOrchestrationItemLock", sql.renewOrchestrationItemLock, lockToken, extendFor);
        announce.accept(Announcements.orchestrationLease(d.end()), d.now());
        return d.end();
    }

    void abandonWorkItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        Done d = abandon("abandonWorkItem", sql.abandonWorkItem, lockToken, delay, ignoreAttempt);
        announce.accept(Announcements.activityReleased(d.end()), d.now());
    }

    void renewWorkItemLock(String lockToken, Duration extendFor) {
        Done d = renew("renewWorkItemLock", sql.renewWorkItemLock, lockToken, extendFor);
        announce.accept(Announcements.activityLeaseRenewed(d.end()), d.now());
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

    /**
     * An item leased to a parked fetch that stopped waiting before the hand-over: released at once, its attempt not
     * counted, so the next claim sees it as never delivered.
     */
    void releaseRefusedHandOver(String token) {
        releaseQuietly(() -> abandonWorkItem(token, null, true),
                "pgdurable: could not release an item whose parked fetch had stopped waiting; its lease expires on "
                        + "its own: {}");
    }

    /**
     * An instance claimed for a parked orchestrator fetch that stopped waiting before the hand-over: released at
     * once (which announces its messages), the attempt not counted.
     */
    void releaseRefusedOrchestrationHandOver(String token) {
        releaseQuietly(() -> abandonOrchestrationItem(token, null, true),
                "pgdurable: could not release an instance whose parked fetch had stopped waiting; its lock expires "
                        + "on its own: {}");
    }

    /** The lease expires on its own, so a failed release is only logged: the caller reports the real error. */
    private static void releaseQuietly(Runnable release, String warning) {
        try {
            release.run();
        } catch (ProviderException e) {
            LOG.warn(warning, e.getMessage());
        }
    }

    /** A committed token call: the application time it passed and its duration (delay or extension). */
    private record Done(long now, long millis) {
        /** When the release becomes visible or the renewed lease ends. */
        long end() {
            return now + millis;
        }
    }

    private Done abandon(String op, String statement, String lockToken, Duration delay, boolean ignoreAttempt) {
        Payloads.notNull(op, "lockToken", lockToken);
        long delayMs = Payloads.delayMillis(op, delay);
        return new Done(tokenCall(op, statement, lockToken, delayMs, ignoreAttempt), delayMs);
    }

    private Done renew(String op, String statement, String lockToken, Duration extendFor) {
        Payloads.notNull(op, "lockToken", lockToken);
        long extendMs = Payloads.positiveMillis(op, "extendFor", extendFor);
        return new Done(tokenCall(op, statement, lockToken, extendMs, null), extendMs);
    }

    /**
     * {@code statement(token, now, millis[, ignoreAttempt])}; the flag is bound only when given. Returns the
     * application time passed as {@code now}.
     */
    private long tokenCall(String op, String statement, String lockToken, long millis, Boolean ignoreAttempt) {
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
        return now;
    }
}
