package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Announcer;
import io.pgdurable.internal.longpoll.Hint;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * What a committed write tells the waiters (docs/long-polling.md, "How it works", 2): this process's parked fetches
 * at once, other processes by NOTIFY, either inside the write's own statement (payloads an idle announcer hands out,
 * {@link Announcer#inlinePayloads}) or from the announcer's thread after the commit. A message for an instance whose
 * turn this provider runs wakes no local fetch before that turn ends ({@link TurnsInProgress}): the turn's end gives
 * the wake instead.
 */
final class WriteAnnouncements {
    private final Announcer announcer;
    private final TurnsInProgress turns;
    /** The task hub's notification channel (a value passed to pg_notify, never spliced into SQL). */
    private final String channel;

    WriteAnnouncements(Announcer announcer, TurnsInProgress turns, String channel) {
        this.announcer = announcer;
        this.turns = turns;
        this.channel = channel;
    }

    String channel() {
        return channel;
    }

    /** The turns this provider handed out and has not seen end; filled only with long polling (local wakes). */
    TurnsInProgress turns() {
        return turns;
    }

    /** The payloads of {@code hints} for the write's own statement, or null: announce them after the commit. */
    List<String> inlinePayloads(List<Hint> hints, long now) {
        return announcer.inlinePayloads(hints, now);
    }

    /** Binds the channel and payloads of a notifying statement at {@code first}; nothing without inline payloads. */
    void bindInline(Connection c, PreparedStatement ps, int first, List<String> inline) throws SQLException {
        if (inline != null) {
            ps.setString(first, channel);
            ps.setArray(first + 1, c.createArrayOf("text", inline.toArray()));
        }
    }

    /** Hints of a committed write that nobody was told of yet: to this process's waiters and to the others. */
    void announce(List<Hint> hints, long now) {
        announcer.announce(hints, now);
    }

    /** After a write's commit: its hints to this process's waiters, and to the others unless they went inline. */
    void committed(List<Hint> hints, long now, List<String> inline) {
        if (inline == null) {
            announcer.announce(hints, now);
        } else {
            announcer.wakeHere(hints, now);
        }
    }

    /**
     * A message for {@code instance}, claimable at {@code visibleAt}, has committed: while a turn of this provider
     * holds the instance, the local wake for a message due now waits for that turn's end; others are told now unless
     * the write told them itself ({@code othersTold}).
     */
    void messageCommitted(String instance, long visibleAt, long now, boolean othersTold) {
        List<Hint> hints = Announcements.orchestratorMessage(visibleAt);
        if (!(visibleAt <= now && turns.defer(instance, now))) {
            announcer.wakeHere(hints, now);
        }
        if (!othersTold) {
            announcer.tellOthers(hints, now);
        }
    }

    /**
     * A turn's ack committed at {@code now}: the turn ends before its announcement goes out, so a wake deferred to it
     * is either covered by the claim that announcement leads to or given here. {@code lateMessagesAt} is the earliest
     * visibility time of the messages that arrived for the instance during the turn (null: none did); only the
     * database knows it, so it always takes the announcer's path.
     */
    void turnCommitted(String lockToken, long now, List<Hint> itemHints, List<String> inline, Long lateMessagesAt) {
        boolean deferred = turns.end(lockToken);
        committed(itemHints, now, inline);
        if (lateMessagesAt != null) {
            announcer.announce(Announcements.orchestratorMessage(lateMessagesAt), now);
        } else if (deferred) {
            announcer.wakeHere(Announcements.orchestratorMessage(now), now);
        }
    }

    /** A turn ended without its ack's announcement (abandoned, or the ack failed): gives a wake deferred to it. */
    void turnEnded(String lockToken, long now) {
        if (lockToken != null && turns.end(lockToken)) {
            announcer.wakeHere(Announcements.orchestratorMessage(now), now);
        }
    }
}
