package io.pgdurable.longpoll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** An application's own LISTEN through the public ChannelListener: connect, notifications, reconnect, close. */
class ChannelListenerTest {
    private static final Duration HEARTBEAT = Duration.ofSeconds(30);

    @Test
    void delivers_notifications_and_reconnects_after_its_backend_is_terminated() throws Exception {
        String channel = ChannelListener.channelName("app.", TestDatabase.newSchemaName("chl"));
        BlockingQueue<String> payloads = new LinkedBlockingQueue<>();
        Semaphore connected = new Semaphore(0);
        try (ChannelListener listener = ChannelListener.start(TestDatabase.url(), channel, HEARTBEAT, payloads::add,
                connected::release);
             Connection c = TestDatabase.connect()) {
            assertEquals(channel, listener.channel());
            assertTrue(connected.tryAcquire(30, TimeUnit.SECONDS), "LISTEN active");
            assertTrue(listener.isListening());
            notify(c, channel, "one");
            assertEquals("one", payloads.poll(10, TimeUnit.SECONDS));

            try (PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    + "WHERE application_name = ? AND query LIKE ?")) {
                ps.setString(1, ChannelListener.APPLICATION_NAME);
                ps.setString(2, "LISTEN %" + channel + "%");
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next(), "found the listener's backend by its application_name");
                }
            }
            assertTrue(connected.tryAcquire(30, TimeUnit.SECONDS), "LISTEN again after the backend was terminated");
            notify(c, channel, "two");
            assertEquals("two", payloads.poll(10, TimeUnit.SECONDS));
            listener.close();
            assertFalse(listener.isListening(), "closed");
        }
    }

    @Test
    void bad_arguments_are_refused_by_name() {
        String url = TestDatabase.url();
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class,
                () -> ChannelListener.start(url, "", HEARTBEAT, p -> { }, () -> { }));
        assertTrue(empty.getMessage().contains("channel"), empty.getMessage());
        IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                () -> ChannelListener.start(url, "c".repeat(64), HEARTBEAT, p -> { }, () -> { }));
        assertTrue(tooLong.getMessage().contains("63"), tooLong.getMessage());
        IllegalArgumentException notPgjdbc = assertThrows(IllegalArgumentException.class,
                () -> ChannelListener.start("jdbc:mysql://h/d", "c", HEARTBEAT, p -> { }, () -> { }));
        assertTrue(notPgjdbc.getMessage().contains("jdbc:postgresql:"), notPgjdbc.getMessage());
        IllegalArgumentException heartbeat = assertThrows(IllegalArgumentException.class,
                () -> ChannelListener.start(url, "c", Duration.ZERO, p -> { }, () -> { }));
        assertTrue(heartbeat.getMessage().contains("heartbeat"), heartbeat.getMessage());
        assertNotNull(assertThrows(IllegalArgumentException.class,
                () -> ChannelListener.channelName("app.", "not a schema!")).getMessage());
    }

    private static void notify(Connection c, String channel, String payload) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, payload);
            ps.execute();
        }
    }
}
