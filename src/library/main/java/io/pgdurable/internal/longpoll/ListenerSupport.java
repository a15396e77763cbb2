package io.pgdurable.internal.longpoll;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * What both listener drivers do alike: check their arguments (a pgjdbc URL, positive durations) and wait a bounded
 * time for a session to connect and LISTEN, turning every way that wait can end into the same
 * {@link SQLException}. Free of pgjdbc-ng types, so {@link PgjdbcListener} still loads without pgjdbc-ng.
 */
final class ListenerSupport {
    static final String PGJDBC_PREFIX = "jdbc:postgresql:";

    private ListenerSupport() {}

    /** Never quotes the URL: it may hold a password. */
    static String requirePgjdbcUrl(String jdbcUrl) {
        Objects.requireNonNull(jdbcUrl, "jdbcUrl");
        if (!jdbcUrl.startsWith(PGJDBC_PREFIX)) {
            throw new IllegalArgumentException("the listener expects a pgjdbc URL starting with " + PGJDBC_PREFIX);
        }
        return jdbcUrl;
    }

    static Duration requirePositive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive");
        }
        return d;
    }

    /**
     * Takes a session advisory lock on a fresh random key and returns the key: while the session lives, other
     * processes find the key held, which is how they tell that this process can still hear them (hand-over across
     * processes). A fresh key is held by nobody, so the call does not wait. Listeners take it just before LISTEN and
     * publish the key once LISTEN succeeded, so the session's last statement, as {@code pg_stat_activity} shows it,
     * stays the LISTEN that names its channel.
     */
    static long takeLivenessLock(Connection c) throws SQLException {
        long key;
        do {
            key = ThreadLocalRandom.current().nextLong();
        } while (key == 0);
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock(?)")) {
            ps.setLong(1, key);
            ps.execute();
        }
        return key;
    }

    /**
     * Takes the channel's shared listener lock ({@link NotifyChannel#listenerLockKeys}) and returns this session's
     * backend process id: writers count the other holders to tell whether anyone else would hear a NOTIFY, leaving
     * out the holder with their own listener's id. Shared locks never wait for each other.
     */
    static int joinListeners(Connection c, String channel) throws SQLException {
        int[] keys = NotifyChannel.listenerLockKeys(channel);
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid() FROM pg_advisory_lock_shared(?, ?)")) {
            ps.setInt(1, keys[0]);
            ps.setInt(2, keys[1]);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    static void checkOpen(String channel, Duration heartbeat, NotificationListener.Events events) {
        Objects.requireNonNull(channel, "channel");
        Objects.requireNonNull(events, "events");
        requirePositive(heartbeat, "heartbeat");
    }

    /**
     * Waits for {@code ready} within {@code connectTimeout}. On timeout, interrupt or failure it runs
     * {@code giveUp} first (so a connection that appears later is not leaked) and then throws.
     */
    static void awaitConnected(CompletableFuture<?> ready, Duration connectTimeout, Runnable giveUp)
            throws SQLException {
        try {
            ready.get(connectTimeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            giveUp.run();
            throw new SQLTimeoutException("the listener could not connect and LISTEN within "
                    + connectTimeout.toMillis() + " ms", "08001");
        } catch (InterruptedException e) {
            giveUp.run();
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted while the listener was connecting", "08001", e);
        } catch (ExecutionException e) {
            giveUp.run();
            throw connectFailure(e.getCause());
        }
    }

    /** A failed connect as the {@link SQLException} {@code open} throws: the driver's own, or one wrapping it. */
    static SQLException connectFailure(Throwable cause) {
        return cause instanceof SQLException sql ? sql
                : new SQLException("the listener could not connect: " + cause, "08001", cause);
    }
}
