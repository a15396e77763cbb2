package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.spi.WorkItem;
import java.util.Collection;
import java.util.List;

import static io.pgdurable.postgres.SqlRunner.setLongOrNull;

import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * What a worker fetch asks for, as the leading parameters that {@code fetch_work_item} and {@code fetch_work_items}
 * share: the lease, the session (may be null) and the tag filter as a mode (0 untagged only, 1 listed tags,
 * 2 untagged or listed, 3 any) with the listed tags.
 */
record WorkerClaim(long lockMs, SessionFetchConfig session, int tagMode, String[] tags) {
    /** Parameters 1 to 7 of both fetch functions. */
    static final int PARAMETERS = 7;

    static WorkerClaim of(long lockMs, SessionFetchConfig session, TagFilter filter) {
        return new WorkerClaim(lockMs, session, mode(filter), tags(filter));
    }

    /** Binds parameters 1 to {@link #PARAMETERS}: now, lease, token (or token prefix), session, tags. */
    void bind(Connection c, PreparedStatement ps, long now, String token) throws SQLException {
        ps.setLong(1, now);
        bindLease(c, ps, 2, token);
    }

    /** Binds the six parameters after the time, from parameter {@code first} on (a call that acks first). */
    void bindLease(Connection c, PreparedStatement ps, int first, String token) throws SQLException {
        ps.setLong(first, lockMs);
        ps.setString(first + 1, token);
        ps.setString(first + 2, session == null ? null : session.ownerId());
        setLongOrNull(ps, first + 3, session == null ? null : session.lockTimeout().toMillis());
        ps.setInt(first + 4, tagMode);
        ps.setArray(first + 5, c.createArrayOf("text", tags));
    }

    /** What claiming {@code claimed} at {@code now} announces: their lease end, and the session lease if taken. */
    List<Hint> leaseHints(long now, Collection<WorkItem> claimed) {
        return Announcements.activityLeases(now + lockMs, claimed,
                session == null ? null : now + session.lockTimeout().toMillis());
    }

    private static int mode(TagFilter filter) {
        if (filter instanceof TagFilter.DefaultOnly) {
            return 0;
        } else if (filter instanceof TagFilter.Tags) {
            return 1;
        } else if (filter instanceof TagFilter.DefaultAnd) {
            return 2;
        }
        return 3;
    }

    private static String[] tags(TagFilter filter) {
        if (filter instanceof TagFilter.Tags t) {
            return t.tags().toArray(new String[0]);
        } else if (filter instanceof TagFilter.DefaultAnd d) {
            return d.tags().toArray(new String[0]);
        }
        return new String[0];
    }
}
