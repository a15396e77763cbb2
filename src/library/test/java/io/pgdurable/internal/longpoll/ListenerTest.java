package io.pgdurable.internal.longpoll;

import static io.pgdurable.internal.longpoll.ListenerFixtures.listenerPid;
import static io.pgdurable.internal.longpoll.ListenerFixtures.millisSince;
import static io.pgdurable.internal.longpoll.ListenerFixtures.newChannel;
import static io.pgdurable.internal.longpoll.ListenerFixtures.sendNotify;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.pgdurable.internal.longpoll.ListenerFixtures.Driver;
import io.pgdurable.internal.longpoll.ListenerFixtures.Recorder;
import io.pgdurable.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Both {@link NotificationListener} implementations against a real PostgreSQL. */
class ListenerTest {
    private static final Duration LONG_HEARTBEAT = Duration.ofSeconds(30);

    @ParameterizedTest
    @EnumSource(Driver.class)
    void delivers_notifications_of_its_channel_with_payload(Driver driver) throws Exception {
        String channel = newChannel();
        Recorder rec = new Recorder();
        NotificationListener.Session s = driver.create(TestDatabase.url()).open(channel, LONG_HEARTBEAT, rec);
        try {
            sendNotify(newChannel(), "not for us");
            sendNotify(channel, "hello ünïcödé {\"q\":\"orchestrator\"}");
            sendNotify(channel, "");
            assertEquals("hello ünïcödé {\"q\":\"orchestrator\"}", rec.payloads.poll(5, TimeUnit.SECONDS));
            assertEquals("", rec.payloads.poll(5, TimeUnit.SECONDS));
            assertEquals(0, rec.lostCount.get());
        } finally {
            s.close();
        }
        assertEquals(0, rec.lostCount.get(), "closing a session is not a loss");
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void payloads_of_a_transaction_arrive_only_after_commit(Driver driver) throws Exception {
        String channel = newChannel();
        Recorder rec = new Recorder();
        NotificationListener.Session s = driver.create(TestDatabase.url()).open(channel, LONG_HEARTBEAT, rec);
        try (Connection sender = TestDatabase.connect()) {
            sender.setAutoCommit(false);
            sendNotify(sender, channel, "a");
            sendNotify(sender, channel, "b");
            // Time is the subject here: nothing may arrive while the transaction is open.
            assertNull(rec.payloads.poll(300, TimeUnit.MILLISECONDS), "delivered before commit");
            sender.commit();
            assertEquals("a", rec.payloads.poll(5, TimeUnit.SECONDS));
            assertEquals("b", rec.payloads.poll(5, TimeUnit.SECONDS));
            sender.setAutoCommit(true);
        } finally {
            s.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void terminated_backend_is_reported_lost_once(Driver driver) throws Exception {
        String channel = newChannel();
        Recorder rec = new Recorder();
        NotificationListener.Session s = driver.create(TestDatabase.url()).open(channel, LONG_HEARTBEAT, rec);
        try {
            int pid = listenerPid(channel, Set.of(), Duration.ofSeconds(5));
            long t0 = System.nanoTime();
            ListenerFixtures.terminate(pid);
            assertTrue(rec.lost.await(5, TimeUnit.SECONDS), "loss not reported within 5 s");
            long detected = TimeUnit.NANOSECONDS.toMillis(rec.lostAtNanos - t0);
            System.out.printf("[%s] pg_terminate_backend -> lost in %d ms (%s)%n", driver, detected, rec.cause);
            assertNotNull(rec.cause);
        } finally {
            long t1 = System.nanoTime();
            s.close();
            s.close();
            assertTrue(millisSince(t1) < 2_000, "close took " + millisSince(t1) + " ms");
        }
        assertEquals(1, rec.lostCount.get(), "lost is reported exactly once");
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void half_open_socket_is_found_by_the_heartbeat(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        String channel = newChannel();
        Recorder rec = new Recorder();
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url())) {
            NotificationListener.Session s = driver.create(proxy.rewrite(TestDatabase.url()))
                    .open(channel, Duration.ofSeconds(1), rec);
            try {
                sendNotify(channel, "through the proxy");
                assertEquals("through the proxy", rec.payloads.poll(5, TimeUnit.SECONDS));

                proxy.wedge();
                long t0 = System.nanoTime();
                // Time is the subject: the wedge itself is silent, only the heartbeat can find it.
                assertFalse(rec.lost.await(1_000, TimeUnit.MILLISECONDS), "lost reported at once");
                assertTrue(rec.lost.await(3_500 - millisSince(t0), TimeUnit.MILLISECONDS),
                        "half-open socket not found within 3.5 s");
                long detected = TimeUnit.NANOSECONDS.toMillis(rec.lostAtNanos - t0);
                System.out.printf("[%s] half-open (heartbeat 1 s) -> lost in %d ms (%s)%n", driver, detected,
                        rec.cause);
                assertTrue(detected >= 1_000 && detected <= 3_500, "detected after " + detected + " ms");

                long t1 = System.nanoTime();
                s.close();
                assertTrue(millisSince(t1) < 2_000, "close took " + millisSince(t1) + " ms");
            } finally {
                s.close();
            }
        }
        assertEquals(1, rec.lostCount.get());
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void close_returns_quickly_while_the_socket_is_wedged(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        String channel = newChannel();
        Recorder rec = new Recorder();
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url())) {
            NotificationListener.Session s = driver.create(proxy.rewrite(TestDatabase.url()))
                    .open(channel, Duration.ofMillis(200), rec);
            proxy.wedge();
            long wedgedAt = System.nanoTime();
            // Time is the subject: let a heartbeat validation get stuck on the wedged socket (it needs 2 s to fail).
            assertFalse(rec.lost.await(600, TimeUnit.MILLISECONDS), "lost reported at once");
            long t0 = System.nanoTime();
            s.close();
            long took = millisSince(t0);
            System.out.printf("[%s] close with a wedged socket and a heartbeat in flight: %d ms%n", driver, took);
            assertTrue(took < 2_000, "close took " + took + " ms");
            // A closed session reports nothing, not even when the stuck validation finally fails.
            assertFalse(rec.lost.await(3_000 - millisSince(wedgedAt), TimeUnit.MILLISECONDS));
            assertEquals(0, rec.lostCount.get());
            long t1 = System.nanoTime();
            s.close();
            assertTrue(millisSince(t1) < 100, "second close is a no-op");
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void open_gives_up_on_a_black_hole_within_the_connect_timeout(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url())) {
            proxy.wedge();
            NotificationListener listener = driver.create(proxy.rewrite(TestDatabase.url()), Duration.ofSeconds(1));
            long t0 = System.nanoTime();
            assertThrows(SQLException.class, () -> listener.open(newChannel(), Duration.ofSeconds(1), new Recorder()));
            long took = millisSince(t0);
            System.out.printf("[%s] open into a black hole gave up after %d ms%n", driver, took);
            assertTrue(took >= 900 && took < 2_500, "gave up after " + took + " ms");
        }
    }

    @Test
    void a_timed_out_pgjdbc_ng_connect_is_taken_by_the_next_open_instead_of_connecting_twice() throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url())) {
            proxy.wedge();
            // A connect counts as stuck after four connect timeouts, and the second open gives up after two: with 3 s
            // a starved machine has 3 s of slack before a fresh connect could replace the first one.
            NotificationListener listener = Driver.PGJDBC_NG.create(proxy.rewrite(TestDatabase.url()),
                    Duration.ofSeconds(3));
            String channel = newChannel();
            Recorder rec = new Recorder();
            assertThrows(SQLException.class, () -> listener.open(channel, LONG_HEARTBEAT, rec));
            assertEquals(1, proxy.accepted(), "one connect under way");
            proxy.forward();
            NotificationListener.Session s = listener.open(channel, LONG_HEARTBEAT, rec);
            try {
                sendNotify(channel, "on the connect that outlived the first open");
                assertEquals("on the connect that outlived the first open", rec.payloads.poll(5, TimeUnit.SECONDS));
                assertEquals(1, proxy.accepted(), "the second open took the first one's connection");
            } finally {
                s.close();
            }
        }
    }

    @Test
    void a_stuck_pgjdbc_ng_connect_is_replaced_after_one_connect_timeout_once_the_listener_has_connected() throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url())) {
            Duration connectTimeout = Duration.ofSeconds(1);
            NotificationListener listener = Driver.PGJDBC_NG.create(proxy.rewrite(TestDatabase.url()),
                    connectTimeout);
            String channel = newChannel();
            Recorder rec = new Recorder();
            // Warm: the driver has met the server (a JVM's first pgjdbc-ng connect may outlast one open's budget).
            NotificationListener.Session first = null;
            for (long t = System.nanoTime(); first == null && millisSince(t) < 30_000; ) {
                try {
                    first = listener.open(channel, LONG_HEARTBEAT, rec);
                } catch (SQLException slowFirstConnect) {
                    // the connect goes on; the next open takes it
                }
            }
            assertNotNull(first, "the listener never connected");
            first.close();
            int acceptedBefore = proxy.accepted();
            proxy.swallowNext(1);
            long t0 = System.nanoTime();
            NotificationListener.Session s = null;
            int failedOpens = 0;
            while (s == null && millisSince(t0) < 15_000) {
                try {
                    s = listener.open(channel, LONG_HEARTBEAT, rec);
                } catch (SQLException timedOut) {
                    failedOpens++;
                }
            }
            long tookMillis = millisSince(t0);
            assertNotNull(s, "no open succeeded within 15 s");
            try {
                sendNotify(channel, "after the stuck connect");
                assertEquals("after the stuck connect", rec.payloads.poll(5, TimeUnit.SECONDS));
                // The swallowed connect and its replacement; on a loaded machine the replacement may itself outlast
                // a connect timeout and be replaced once more, but never more than once per timeout.
                int connects = proxy.accepted() - acceptedBefore;
                assertTrue(connects >= 2 && connects <= 2 + tookMillis / connectTimeout.toMillis(),
                        connects + " connects in " + tookMillis + " ms");
                // Replaced after one connect timeout: about 1 s; waiting four timeouts for it took over 4 s.
                assertTrue(tookMillis >= connectTimeout.toMillis() - 50, "took only " + tookMillis + " ms");
                assertTrue(tookMillis < 3_500,
                        "took " + tookMillis + " ms (" + failedOpens + " opens ran out of time)");
            } finally {
                s.close();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void interrupted_open_returns_promptly(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url())) {
            proxy.wedge();
            NotificationListener listener = driver.create(proxy.rewrite(TestDatabase.url()), Duration.ofSeconds(30));
            Thread.currentThread().interrupt();
            long t0 = System.nanoTime();
            try {
                assertThrows(SQLException.class,
                        () -> listener.open(newChannel(), Duration.ofSeconds(1), new Recorder()));
                assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is preserved");
            } finally {
                Thread.interrupted();
            }
            assertTrue(millisSince(t0) < 1_000, "open took " + millisSince(t0) + " ms");
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void close_ends_the_backend_and_reports_nothing(Driver driver) throws Exception {
        String channel = newChannel();
        Recorder rec = new Recorder();
        NotificationListener.Session s = driver.create(TestDatabase.url()).open(channel, LONG_HEARTBEAT, rec);
        int pid = listenerPid(channel, Set.of(), Duration.ofSeconds(5));
        long t0 = System.nanoTime();
        s.close();
        s.close();
        assertTrue(millisSince(t0) < 2_000);
        assertTrue(ListenerFixtures.backendGone(pid, Duration.ofSeconds(5)), "the listener backend lingers");
        assertEquals(0, rec.lostCount.get());
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void silent_but_healthy_connection_survives_heartbeats(Driver driver) throws Exception {
        String channel = newChannel();
        Recorder rec = new Recorder();
        NotificationListener.Session s = driver.create(TestDatabase.url()).open(channel, Duration.ofMillis(200), rec);
        try {
            // Time is the subject: several heartbeats pass on a healthy, silent connection.
            assertFalse(rec.lost.await(1_200, TimeUnit.MILLISECONDS), "healthy connection reported lost: " + rec.cause);
            sendNotify(channel, "still here");
            assertEquals("still here", rec.payloads.poll(5, TimeUnit.SECONDS));
        } finally {
            s.close();
        }
    }

    @Test
    void converts_the_pgjdbc_url_for_pgjdbc_ng() {
        PgjdbcNgListener.Target t = PgjdbcNgListener.convert(
                "jdbc:postgresql://db.example:5433/my%20db?user=app&password=p%40ss%26w&sslmode=require"
                        + "&ApplicationName=x&reWriteBatchedInserts=true");
        assertEquals("jdbc:pgsql://db.example:5433/my%20db", t.url());
        Properties p = t.properties();
        assertEquals("app", p.getProperty("user"));
        assertEquals("p@ss&w", p.getProperty("password"));
        assertEquals("require", p.getProperty("ssl.mode"));
        assertEquals("pgdurable-listener", p.getProperty("application.name"));
        assertNull(p.getProperty("reWriteBatchedInserts"));
        assertFalse(t.toString().contains("p@ss"));

        assertEquals("jdbc:pgsql://localhost:5432/test", PgjdbcNgListener.convert("jdbc:postgresql:test").url());
        assertEquals("jdbc:pgsql://h1:5432,[::1]:6000/d",
                PgjdbcNgListener.convert("jdbc:postgresql://h1,[::1]:6000/d?user=u").url());
        assertEquals("jdbc:pgsql://h:5432/u", PgjdbcNgListener.convert("jdbc:postgresql://h/?user=u").url());
        assertEquals("prefer", PgjdbcNgListener.convert("jdbc:postgresql://h/d").properties().getProperty("ssl.mode"));
        assertEquals("verify-full",
                PgjdbcNgListener.convert("jdbc:postgresql://h/d?ssl=true").properties().getProperty("ssl.mode"));
        Duration timeout = NotificationListener.DEFAULT_CONNECT_TIMEOUT;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new PgjdbcNgListener("jdbc:mysql://h/d?password=secret", timeout, false));
        assertFalse(e.getMessage().contains("secret"));
        String withPassword = "jdbc:postgresql://h/d?user=u&password=secret";
        assertFalse(new PgjdbcNgListener(withPassword, timeout, false).toString().contains("secret"));
        assertFalse(new PgjdbcListener(withPassword, timeout, false).toString().contains("secret"));
        assertEquals("jdbc:postgresql://h/d?user=u&x=1",
                PgjdbcListener.withoutParameter("jdbc:postgresql://h/d?user=u&ApplicationName=a&x=1",
                        "ApplicationName"));
    }
}
