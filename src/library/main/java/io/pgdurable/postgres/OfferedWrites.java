package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;

/**
 * The enqueuing side of the hand-over across processes ({@code handOverAcrossProcesses},
 * docs/long-polling.md "Hand-over across processes"): {@code enqueueForWorker} of an untagged item without a session
 * offers it to a parked fetch of another process, leased to it in the enqueue's transaction and sent in the NOTIFY.
 * When no process takes it, the same statement writes it unleased and sends the inline payloads, if any; it is then
 * announced like any write. Every other write goes to the next path.
 */
final class OfferedWrites implements WritePath {
    /**
     * How long an item handed to another process stays leased before that process holds it for its fetch's lock time
     * (it does so about a millisecond after it heard it): the longest an item waits when the taker's listener died
     * before reading it. Long enough that a busy taker holds its items in time, short next to usual lock times.
     */
    static final long OFFERED_LEASE_MS = 5_000;

    private final WritePath next;
    private final SqlRunner db;
    private final Statements sql;
    private final WriteAnnouncements announcements;
    /** This provider's announcer origin: the function skips this provider's own row of parked fetches. */
    private final String origin;

    OfferedWrites(WritePath next, SqlRunner db, Statements sql, WriteAnnouncements announcements, String origin) {
        this.next = next;
        this.db = db;
        this.sql = sql;
        this.announcements = announcements;
        this.origin = origin;
    }

    @Override
    public void enqueueForWorker(String op, String json, long now, WorkItem.ActivityExecute item) {
        if (item.sessionId() != null || item.tag() != null) {
            next.enqueueForWorker(op, json, now, item);
            return;
        }
        List<Hint> hints = Announcements.workerItems(now, List.of(item));
        List<String> inline = announcements.inlinePayloads(hints, now);
        String taker = db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.enqueueWorkerItemOffered)) {
                AnnouncedWrites.bindWorkerItem(ps, json, now, item);
                ps.setString(8, origin);
                ps.setString(9, SqlRunner.newToken());
                ps.setString(10, announcements.channel());
                ps.setArray(11, c.createArrayOf("text", inline == null ? new Object[0] : inline.toArray()));
                ps.setLong(12, OFFERED_LEASE_MS);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getString(1) : null;
                }
            }
        });
        if (taker == null) {
            announcements.committed(hints, now, inline);
        }
    }

    @Override
    public void writeMessage(MessageWrite write) {
        next.writeMessage(write);
    }

    @Override
    public void ackTurn(String lockToken, TurnEncoder turn) {
        next.ackTurn(lockToken, turn);
    }

    @Override
    public void turnStarted(String instance, String lockToken, long lockedUntilMs, long nowMs) {
        next.turnStarted(instance, lockToken, lockedUntilMs, nowMs);
    }

    @Override
    public void turnRenewed(String lockToken, long lockedUntilMs) {
        next.turnRenewed(lockToken, lockedUntilMs);
    }
}
