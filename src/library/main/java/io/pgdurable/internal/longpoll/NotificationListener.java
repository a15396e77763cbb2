package io.pgdurable.internal.longpoll;

import java.sql.SQLException;
import java.time.Duration;

/**
 * One dedicated connection that LISTENs on the task hub's channel. An implementation knows its driver; it owns no
 * reconnect policy (that is {@link Notifier}'s job).
 */
public interface NotificationListener {
    /** How long connect plus LISTEN may take unless the listener's constructor says otherwise. */
    Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);

    /**
     * Connects and LISTENs on {@code channel} (quoted, so the name is taken exactly); returns once LISTEN is
     * active. From then on notifications and the loss of the connection go to {@code events}, from the
     * implementation's own threads. After {@code heartbeat} without traffic the connection is validated (answer
     * within 2 s), so a half-open socket is found within about {@code heartbeat} + 2 s.
     */
    Session open(String channel, Duration heartbeat, Events events) throws SQLException;

    /** The life of one connection. */
    interface Session extends AutoCloseable {
        /**
         * The advisory lock key this session holds for as long as it lives (see
         * {@link PgjdbcListener#PgjdbcListener(String, Duration, boolean)}), or 0 when it holds none.
         */
        default long livenessKey() {
            return 0;
        }

        /** The server process id of this session, which holds the channel's listener lock; 0 when unknown. */
        default int backendPid() {
            return 0;
        }

        /**
         * Closes the connection; returns within about a second even when the socket is wedged (a driver call that
         * does not end in time is abandoned on a daemon thread). Idempotent. A closed session reports nothing more:
         * closing is not a loss.
         */
        @Override
        void close();
    }

    /** Where a session reports. Calls must return quickly: they run on the driver's or the listener's thread. */
    interface Events {
        void notification(String payload);

        /**
         * The connection is dead (error, closed by the server, failed heartbeat). Called at most once per session,
         * only for a session {@code open} returned (possibly before it returned), and never after its close began.
         */
        void lost(Throwable cause);
    }
}
