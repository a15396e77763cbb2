package io.pgdurable.longpoll;

import io.pgdurable.internal.longpoll.NotificationListener;
import io.pgdurable.internal.longpoll.Notifier;
import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.internal.longpoll.PgjdbcListener;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Keeps a LISTEN on one channel alive, for an application's own notifications beside a task hub's (the Durable Task
 * sidecar wakes its status waiters this way). It holds one dedicated pgjdbc connection, separate from any pool,
 * whose {@code application_name} is {@link #APPLICATION_NAME}; a connection found dead (an error, the server gone, a
 * heartbeat unanswered within two seconds) is reconnected with capped, jittered backoff (75 ms doubling to 0.8 s),
 * the same machinery long polling uses.
 *
 * <p>Notifications can be lost while the connection is down: {@code onConnected} runs after every (re)connect, once
 * LISTEN is active again, so the application can re-read whatever it waits for. Both callbacks run on the listener's
 * own threads and must return quickly. {@link #close()} returns within about two seconds in every state.
 */
public final class ChannelListener implements AutoCloseable {
    /**
     * The {@code application_name} of every listener connection pgdurable opens (long polling's and this class's),
     * so they can be told apart in {@code pg_stat_activity} from the pool's connections.
     */
    public static final String APPLICATION_NAME = "pgdurable-listener";

    private final Notifier notifier;

    private ChannelListener(Notifier notifier) {
        this.notifier = notifier;
    }

    /**
     * A channel name of a task hub: {@code prefix} followed by the schema name, shortened with a hash of the schema
     * when it would pass PostgreSQL's 63-byte limit on identifiers, as the provider names its own channel.
     *
     * @throws IllegalArgumentException when {@code schema} is not a valid schema name
     */
    public static String channelName(String prefix, String schema) {
        Objects.requireNonNull(prefix, "prefix");
        return NotifyChannel.forSchema(prefix, schema);
    }

    /**
     * Starts listening on {@code channel} and returns at once; the first connect happens on the listener's thread
     * ({@code onConnected} tells when LISTEN is active).
     *
     * @param jdbcUrl        a pgjdbc URL ({@code jdbc:postgresql:...}); credentials may be URL parameters
     * @param channel        the channel, taken exactly as given (it is quoted for LISTEN)
     * @param heartbeat      after this long without traffic the connection is validated, so a half-open socket is
     *                       found within about {@code heartbeat} plus two seconds
     * @param onNotification gets each notification's payload
     * @param onConnected    runs after each connect and reconnect, once LISTEN is active
     * @throws IllegalArgumentException when the URL is not a pgjdbc URL, the channel is empty or longer than 63
     *                                  bytes, or the heartbeat is not positive
     */
    public static ChannelListener start(String jdbcUrl, String channel, Duration heartbeat,
                                        Consumer<String> onNotification, Runnable onConnected) {
        NotifyChannel.check(channel);
        Notifier notifier = new Notifier(new PgjdbcListener(jdbcUrl, NotificationListener.DEFAULT_CONNECT_TIMEOUT, false), channel, heartbeat, onNotification,
                onConnected, LongPollSignals.NONE);
        notifier.start();
        return new ChannelListener(notifier);
    }

    /** The channel this listener LISTENs on. */
    public String channel() {
        return notifier.channel();
    }

    /** Whether the connection is up with LISTEN active right now. */
    public boolean isListening() {
        return notifier.isListening();
    }

    /** Stops listening and closes the connection; idempotent. */
    @Override
    public void close() {
        notifier.close();
    }
}
