package io.pgdurable.postgres;

import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * How a single-item write reaches the fetches waiting for what it makes claimable, chosen once when the provider is
 * built (docs/long-polling.md, "Settings that choose an algorithm"). Every provider writes and then announces
 * ({@link AnnouncedWrites}); with {@code handOverAcrossProcesses} an untagged worker item is first offered to a parked
 * fetch of another process ({@link OfferedWrites}); with long polling an item is first given to a parked fetch of
 * this provider ({@link HandedOverWrites}). Each path takes the writes it can and passes the rest to the next one.
 * Batched writes and lease operations always announce; they are not write paths.
 */
interface WritePath {
    /** {@code enqueueForWorker}'s write of {@code item}, encoded as {@code json}, at {@code now}. */
    void enqueueForWorker(String op, String json, long now, WorkItem.ActivityExecute item);

    /** A write that makes a message for an orchestration instance claimable at {@code visibleAt}. */
    void writeMessage(MessageWrite write);

    /** A turn's ack for {@code lockToken}: the turn's writes, its announcement and the end of the turn. */
    void ackTurn(String lockToken, TurnEncoder turn);

    /** A fetch of this provider handed out {@code instance}'s turn: only a path with local waiters tracks it. */
    default void turnStarted(String instance, String lockToken, long lockedUntilMs, long nowMs) {
    }

    /** That turn's lease was renewed until {@code lockedUntilMs}. */
    default void turnRenewed(String lockToken, long lockedUntilMs) {
    }

    /**
     * One statement that writes a message for {@code instance} (an enqueue, or an activity's completion acked), in
     * its plain, notifying (its NOTIFY in the same statement) and claiming forms, whose first five parameters
     * {@code binder} sets.
     */
    record MessageWrite(String op, String plain, String notifying, String claiming, Binder binder, String instance,
                        long visibleAt, long now) {
    }

    /** Binds a write's own parameters; the forms' further parameters follow them. */
    @FunctionalInterface
    interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }
}
