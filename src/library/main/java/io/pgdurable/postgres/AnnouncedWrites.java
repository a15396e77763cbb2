package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;

/**
 * The design's write path, every provider's last one: the write commits, then what it made claimable is announced
 * ({@link WriteAnnouncements}). While the announcer is idle the write carries its own NOTIFY in the same statement
 * (docs/long-polling.md, "An idle writer notifies from its own commit"); otherwise the announcer's thread sends it
 * after the commit.
 */
final class AnnouncedWrites implements WritePath {
    private final SqlRunner db;
    private final Statements sql;
    private final WriteAnnouncements announcements;

    AnnouncedWrites(SqlRunner db, Statements sql, WriteAnnouncements announcements) {
        this.db = db;
        this.sql = sql;
        this.announcements = announcements;
    }

    @Override
    public void enqueueForWorker(String op, String json, long now, WorkItem.ActivityExecute item) {
        List<Hint> hints = Announcements.workerItems(now, List.of(item));
        List<String> inline = announcements.inlinePayloads(hints, now);
        db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(inline == null ? sql.enqueueWorkerItem
                    : sql.enqueueWorkerItemNotifying)) {
                bindWorkerItem(ps, json, now, item);
                announcements.bindInline(c, ps, 8, inline);
                ps.execute();
                return null;
            }
        });
        announcements.committed(hints, now, inline);
    }

    @Override
    public void writeMessage(MessageWrite w) {
        List<String> inline = announcements.inlinePayloads(Announcements.orchestratorMessage(w.visibleAt()), w.now());
        db.call(w.op(), c -> {
            try (PreparedStatement ps = c.prepareStatement(inline == null ? w.plain() : w.notifying())) {
                w.binder().bind(ps);
                announcements.bindInline(c, ps, 6, inline);
                ps.execute();
                return null;
            }
        });
        announcements.messageCommitted(w.instance(), w.visibleAt(), w.now(), inline != null);
    }

    @Override
    public void ackTurn(String lockToken, TurnEncoder turn) {
        // What the turn's own items make claimable is known before the ack; messages that arrived during the turn
        // only from its result, so those always take the announcer's path.
        List<Hint> itemHints = turn.hints(turn.workers);
        List<String> inline = announcements.inlinePayloads(itemHints, turn.now);
        Long lateMessagesAt;
        try {
            lateMessagesAt = db.call(TurnEncoder.OP, c -> {
                try (PreparedStatement ps = c.prepareStatement(inline == null ? sql.ackOrchestrationItem
                        : sql.ackOrchestrationItemNotifying)) {
                    announcements.bindInline(c, ps, turn.bind(c, ps, lockToken), inline);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        long next = rs.getLong(1);
                        return rs.wasNull() ? null : next;
                    }
                }
            });
        } catch (RuntimeException e) {
            announcements.turnEnded(lockToken, turn.now);
            throw e;
        }
        announcements.turnCommitted(lockToken, turn.now, itemHints, inline, lateMessagesAt);
    }

    /** Binds an enqueued activity's seven arguments, as every form of the single enqueue takes them. */
    static void bindWorkerItem(PreparedStatement ps, String json, long now, WorkItem.ActivityExecute a)
            throws SQLException {
        ps.setString(1, json);
        ps.setLong(2, now);
        ps.setString(3, a.instance());
        ps.setLong(4, a.executionId());
        ps.setLong(5, a.id());
        ps.setString(6, a.sessionId());
        ps.setString(7, a.tag());
    }
}
