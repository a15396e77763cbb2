package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a notification (or a scan) says: from {@code atMs} on, {@code count} items of a queue may be claimable; a
 * count of 0 means a lease ends at {@code atMs} (one item may come back). For the worker queue it also says whether
 * untagged items, which tags ({@code tags == null}: unknown, any) and whether session-bound items are involved, so
 * a wake goes to a waiter whose filter can match. Hints are advice: the fetch decides.
 *
 * @param hops how often this hint was passed on by a waiter that could not use it (at most once)
 */
public record Hint(QueueKind queue, long atMs, int count, boolean untagged, Set<String> tags, boolean sessions,
                   int hops) {

    /** Scans and probes count claimable items up to this many; a count at the cap means "at least". */
    public static final int SCAN_CAP = 64;

    /** A hint that anything of {@code queue} may be claimable at {@code atMs} (scans, fallback, reconnects). */
    public static Hint anything(QueueKind queue, long atMs, int count) {
        return new Hint(queue, atMs, count, true, null, true, 0);
    }

    /**
     * True when the count is not a full account of the items (a lease end, a capped scan): a fetch that used this
     * hint successfully wakes one more waiter, so several waiters drain a burst together.
     */
    public boolean openEnded() {
        return count == 0 || count >= SCAN_CAP;
    }

    /** The same routing for one more waiter, marked so it is not passed on again. */
    public Hint chained() {
        return new Hint(queue, atMs, 1, untagged, tags, sessions, 1);
    }

    /** How many waiters this hint may wake: one per item, one for a lease end. */
    public int wakes() {
        return Math.max(1, count);
    }

    /** This hint for another waiter (one), after a waiter could not use it. */
    public Hint passedOn() {
        return new Hint(queue, atMs, 1, untagged, tags, sessions, hops + 1);
    }

    /** More tags than this, or a tag that is long or holds a separator, is announced as "any tag". */
    private static final int MAX_ANNOUNCED_TAGS = 5;
    private static final int MAX_ANNOUNCED_TAG_LENGTH = 64;

    /**
     * The start of a join notification, {@code j|origin}: a provider whose listener began to listen tells the
     * others' announcers, which may have stopped sending while nobody else listened.
     */
    public static final String JOIN_PREFIX = "j|";

    /**
     * The notification payload of this hint, sent by the provider whose announcer is {@code origin}:
     * {@code o|at|n|origin} or {@code w|at|n|u|tags|s|origin} (tags comma-separated, {@code *} for any). A session
     * lease end is a worker lease end with unknown tags.
     */
    public String payload(String origin) {
        StringBuilder b = new StringBuilder(48);
        if (queue == QueueKind.ORCHESTRATOR) {
            b.append("o|").append(atMs).append('|').append(count);
        } else {
            b.append("w|").append(atMs).append('|').append(count).append('|').append(untagged ? '1' : '0').append('|')
                    .append(tagField()).append('|').append(sessions ? '1' : '0');
        }
        return b.append('|').append(origin).toString();
    }

    private String tagField() {
        if (tags == null || tags.size() > MAX_ANNOUNCED_TAGS) {
            return "*";
        }
        for (String t : tags) {
            if (t.length() > MAX_ANNOUNCED_TAG_LENGTH || t.indexOf('|') >= 0 || t.indexOf(',') >= 0) {
                return "*";
            }
        }
        return String.join(",", new TreeSet<>(tags));
    }

    /** The announcer that sent {@code payload}, or null when it names none. */
    public static String origin(String payload) {
        if (payload == null) {
            return null;
        }
        int fields = 1;
        for (int i = 0; i < payload.length(); i++) {
            if (payload.charAt(i) == '|') {
                fields++;
            }
        }
        boolean withOrigin = payload.startsWith("o|") ? fields == 4 : payload.startsWith("w|") ? fields == 7
                : payload.startsWith(JOIN_PREFIX) ? fields == 2 : payload.startsWith("s|") && fields == 3;
        return withOrigin ? payload.substring(payload.lastIndexOf('|') + 1) : null;
    }

    /**
     * Parses a payload ({@code o|at|n}, {@code w|at|n|u|tags|s}, {@code s|at}, each optionally followed by
     * {@code |origin}); null when it is not one of ours (the channel is shared by name only, so anyone may NOTIFY on
     * it).
     */
    public static Hint parse(String payload) {
        if (payload == null) {
            return null;
        }
        String[] f = payload.split("\\|", -1);
        try {
            switch (f[0]) {
                case "o":
                    if (f.length != 3 && f.length != 4) {
                        return null;
                    }
                    return new Hint(QueueKind.ORCHESTRATOR, Long.parseLong(f[1]), count(f[2]), true, null, false, 0);
                case "w":
                    if (f.length != 6 && f.length != 7) {
                        return null;
                    }
                    Set<String> tags = "*".equals(f[4]) ? null : f[4].isEmpty() ? Set.of() : Set.of(f[4].split(","));
                    return new Hint(QueueKind.WORKER, Long.parseLong(f[1]), count(f[2]), "1".equals(f[3]), tags,
                            "1".equals(f[5]), 0);
                case "s":
                    if (f.length != 2 && f.length != 3) {
                        return null;
                    }
                    // A session lease ends: its items become claimable by any session-capable worker.
                    return new Hint(QueueKind.WORKER, Long.parseLong(f[1]), 0, true, null, true, 0);
                default:
                    return null;
            }
        } catch (RuntimeException malformed) {
            return null;
        }
    }

    private static int count(String text) {
        long n = Long.parseLong(text);
        return n < 0 ? 0 : (int) Math.min(n, Integer.MAX_VALUE);
    }
}
