package io.pgdurable.internal.longpoll;

import io.pgdurable.postgres.Identifiers;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;

/** The NOTIFY channel of a task hub: derived from its schema, at most 63 bytes, always LISTENed quoted. */
public final class NotifyChannel {
    private static final String PREFIX = "pgdurable_";

    private NotifyChannel() {}

    /** {@code pgdurable_<schema>}, or for long schema names a prefix of it plus a hash of the whole name. */
    public static String forSchema(String schema) {
        return forSchema(PREFIX, schema);
    }

    /**
     * {@code <prefix><schema>} for another channel of the same task hub, shortened the same way when it would pass
     * PostgreSQL's 63-byte identifier limit.
     */
    public static String forSchema(String prefix, String schema) {
        Identifiers.checkSchemaName(schema);
        String name = prefix + schema;
        if (name.getBytes(StandardCharsets.UTF_8).length <= Identifiers.MAX_BYTES) {
            return name;
        }
        String hash = String.format(Locale.ROOT, "%08x", schema.hashCode());
        return name.substring(0, Identifiers.MAX_BYTES - hash.length() - 1) + "_" + hash;
    }

    /**
     * The two keys of the shared session advisory lock every listener of {@code channel} holds while it lives
     * ({@code pg_advisory_lock_shared(int, int)}): a writer that finds no holder but its own listener knows that no
     * other process can hear its NOTIFY. Both are non-negative, so they read back unchanged from {@code pg_locks}'
     * {@code classid} and {@code objid} (type oid); two channels that hash alike only make both send.
     */
    public static int[] listenerLockKeys(String channel) {
        return new int[] {LISTENER_LOCK_CLASS, check(channel).hashCode() & Integer.MAX_VALUE};
    }

    /** The first key of {@link #listenerLockKeys}: "pgdl" in ASCII, a class of its own among advisory locks. */
    static final int LISTENER_LOCK_CLASS = 0x7067646C;

    /** Checks a channel name given as is: not empty, at most 63 bytes (PostgreSQL would truncate a longer one). */
    public static String check(String channel) {
        Objects.requireNonNull(channel, "channel");
        if (channel.isEmpty()) {
            throw new IllegalArgumentException("the channel name is empty");
        }
        int bytes = channel.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > Identifiers.MAX_BYTES) {
            throw new IllegalArgumentException("the channel name has " + bytes + " bytes; PostgreSQL identifiers hold "
                    + "at most " + Identifiers.MAX_BYTES);
        }
        return channel;
    }

    /** The quoted identifier for LISTEN / UNLISTEN. */
    public static String quoted(String channel) {
        return '"' + channel.replace("\"", "\"\"") + '"';
    }
}
