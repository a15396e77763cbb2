package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import static io.pgdurable.internal.longpoll.ListenerFixtures.listenerPid;
import static io.pgdurable.internal.longpoll.ListenerFixtures.millisSince;
import static io.pgdurable.internal.longpoll.ListenerFixtures.newChannel;
import static io.pgdurable.internal.longpoll.ListenerFixtures.sendNotify;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.pgdurable.internal.longpoll.ListenerFixtures.Driver;
import io.pgdurable.postgres.TestDatabase;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** {@link Notifier}: reconnects, backoff, LISTEN-then-scan order, bounded close; for both drivers. */
class NotifierTest {
    private static final Duration LONG_HEARTBEAT = Duration.ofSeconds(30);

    /** Everything a notifier reports, as queues to wait on. */
    static final class Probe implements LongPollSignals {
        final BlockingQueue<Boolean> listening = new LinkedBlockingQueue<>();
        final BlockingQueue<Throwable> lost = new LinkedBlockingQueue<>();
        final BlockingQueue<long[]> backoffs = new LinkedBlockingQueue<>(); // {failures, delay ms}
        final BlockingQueue<String> signalled = new LinkedBlockingQueue<>();
        final BlockingQueue<String> received = new LinkedBlockingQueue<>();
        final BlockingQueue<Long> onListening = new LinkedBlockingQueue<>();
        volatile Notifier notifier;

        @Override
        public void listening(boolean reconnect) {
            listening.add(reconnect);
        }

        @Override
        public void connectionLost(Throwable cause) {
            lost.add(cause);
        }

        @Override
        public void backoff(int failures, Duration delay) {
            backoffs.add(new long[] {failures, delay.toMillis()});
        }

        @Override
        public void notification(String payload) {
            signalled.add(payload);
        }

        Notifier create(NotificationListener listener, String channel, Duration heartbeat, Runnable alsoOnListening) {
            Notifier n = new Notifier(listener, channel, heartbeat, received::add, () -> {
                onListening.add(System.nanoTime());
                alsoOnListening.run();
            }, this);
            notifier = n;
            return n;
        }

        /** Waits for a backoff signal with at least {@code failures}; returns all seen meanwhile. */
        List<long[]> awaitBackoff(int failures, Duration timeout) throws InterruptedException {
            List<long[]> seen = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (true) {
                long[] b = backoffs.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (b == null) {
                    throw new AssertionError("no backoff with " + failures + " failures; saw " + seen.size());
                }
                seen.add(b);
                if (b[0] >= failures) {
                    return seen;
                }
            }
        }
    }

    private static void assertBackoffShape(long[] b) {
        long nominal = Math.min(Notifier.MAX_RETRY_MILLIS, 75L << Math.min(20, b[0] - 1));
        long low = Math.round(nominal * 0.8) - 1;
        long high = Math.min(Notifier.MAX_RETRY_MILLIS, Math.round(nominal * 1.2) + 1);
        assertTrue(b[1] >= low && b[1] <= high, "backoff after " + b[0] + " failures was " + b[1] + " ms");
    }

    private static void assertClosesQuickly(Notifier n, String state) {
        long t0 = System.nanoTime();
        n.close();
        long took = millisSince(t0);
        System.out.printf("close %s: %d ms%n", state, took);
        assertTrue(took < 2_000, "close " + state + " took " + took + " ms");
        assertFalse(n.isListening());
        long t1 = System.nanoTime();
        n.close();
        assertTrue(millisSince(t1) < 100, "second close is a no-op");
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void reconnects_after_each_termination_and_listens_before_the_scan(Driver driver) throws Exception {
        String channel = newChannel();
        Probe probe = new Probe();
        // The owner's catch-up scan starts in onListening: a NOTIFY sent from there must arrive (LISTEN first).
        int[] round = {0};
        try (Notifier n = probe.create(driver.create(TestDatabase.url()), channel, LONG_HEARTBEAT, () -> {
            try {
                sendNotify(channel, "scan-" + round[0]++);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        })) {
            n.start();
            Set<Integer> killed = new HashSet<>();
            long terminatedAt = 0;
            for (int i = 0; i <= 5; i++) {
                assertEquals(i > 0, probe.listening.poll(15, TimeUnit.SECONDS), "listening signal of round " + i);
                Long listenedAt = probe.onListening.poll(5, TimeUnit.SECONDS);
                assertNotNull(listenedAt, "onListening of round " + i);
                if (i > 0) {
                    System.out.printf("[%s] round %d: listening again %d ms after pg_terminate_backend%n", driver,
                            i, TimeUnit.NANOSECONDS.toMillis(listenedAt - terminatedAt));
                }
                assertTrue(n.isListening());
                assertEquals("scan-" + i, probe.received.poll(5, TimeUnit.SECONDS), "NOTIFY sent from onListening");
                sendNotify(channel, "round-" + i);
                assertEquals("round-" + i, probe.received.poll(5, TimeUnit.SECONDS));
                if (i == 5) {
                    break;
                }
                int pid = listenerPid(channel, killed, Duration.ofSeconds(5));
                killed.add(pid);
                terminatedAt = System.nanoTime();
                ListenerFixtures.terminate(pid);
                assertNotNull(probe.lost.poll(5, TimeUnit.SECONDS), "loss of round " + i);
                long lostAfter = millisSince(terminatedAt);
                long[] b = probe.backoffs.poll(5, TimeUnit.SECONDS);
                assertNotNull(b, "backoff of round " + i);
                assertBackoffShape(b);
                System.out.printf("[%s] round %d: lost %d ms after pg_terminate_backend; backoff %d ms (failures %d)%n",
                        driver, i, lostAfter, b[1], b[0]);
            }
            assertEquals(List.of("scan-0", "round-0"), List.of(probe.signalled.poll(), probe.signalled.poll()));
            assertClosesQuickly(n, "while listening");
        }
    }

    @Test
    void an_error_while_opening_is_retried_like_a_failed_connect() throws Exception {
        String channel = newChannel();
        Probe probe = new Probe();
        NotificationListener real = Driver.PGJDBC.create(TestDatabase.url());
        AtomicInteger opens = new AtomicInteger();
        // What a JVM out of threads throws when a session starts its own.
        NotificationListener outOfThreadsTwice = (ch, heartbeat, events) -> {
            if (opens.incrementAndGet() <= 2) {
                throw new OutOfMemoryError("unable to create native thread: possibly out of memory");
            }
            return real.open(ch, heartbeat, events);
        };
        try (Notifier n = probe.create(outOfThreadsTwice, channel, Duration.ofSeconds(1), () -> {})) {
            n.start();
            List<long[]> seen = probe.awaitBackoff(2, Duration.ofSeconds(10));
            assertEquals(1, seen.get(0)[0], "the first error starts a streak");
            assertEquals(false, probe.listening.poll(15, TimeUnit.SECONDS), "listening after two failed opens");
            assertEquals(3, opens.get(), "opened again after each error, once it passed no more");
            sendNotify(channel, "after the errors");
            assertEquals("after the errors", probe.received.poll(5, TimeUnit.SECONDS));
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void backs_off_while_unreachable_and_recovers(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        String channel = newChannel();
        Probe probe = new Probe();
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url());
                Notifier n = probe.create(driver.create(proxy.rewrite(TestDatabase.url()), Duration.ofSeconds(2)),
                        channel, Duration.ofSeconds(1), () -> {})) {
            n.start();
            assertEquals(false, probe.listening.poll(15, TimeUnit.SECONDS));
            assertNotNull(probe.onListening.poll(5, TimeUnit.SECONDS));

            proxy.drop();
            long t0 = System.nanoTime();
            assertNotNull(probe.lost.poll(5, TimeUnit.SECONDS), "loss not reported after the proxy dropped");
            System.out.printf("[%s] proxy dropped -> lost in %d ms%n", driver, millisSince(t0));
            List<long[]> seen = probe.awaitBackoff(4, Duration.ofSeconds(20));
            assertEquals(1, seen.get(0)[0], "the first backoff starts a streak");
            for (long[] b : seen) {
                assertBackoffShape(b);
            }
            for (int i = 1; i < seen.size(); i++) {
                assertEquals(seen.get(i - 1)[0] + 1, seen.get(i)[0], "failures count up while unreachable");
            }
            assertFalse(n.isListening());
            assertTrue(probe.listening.isEmpty());

            proxy.forward();
            long t1 = System.nanoTime();
            assertEquals(true, probe.listening.poll(15, TimeUnit.SECONDS), "no reconnect after the proxy recovered");
            long recovered = millisSince(t1);
            assertNotNull(probe.onListening.poll(5, TimeUnit.SECONDS), "onListening runs again after a reconnect");
            System.out.printf("[%s] unreachable for %d ms (%d backoffs) -> listening %d ms after the proxy "
                    + "forwarded again%n", driver, TimeUnit.NANOSECONDS.toMillis(t1 - t0), seen.size(), recovered);
            assertTrue(n.isListening());
            sendNotify(channel, "after recovery");
            assertEquals("after recovery", probe.received.poll(5, TimeUnit.SECONDS));
            assertClosesQuickly(n, "after recovery");
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void closes_quickly_while_the_socket_is_wedged(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        String channel = newChannel();
        Probe probe = new Probe();
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url());
                Notifier n = probe.create(driver.create(proxy.rewrite(TestDatabase.url())), channel,
                        Duration.ofSeconds(1), () -> {})) {
            n.start();
            assertEquals(false, probe.listening.poll(15, TimeUnit.SECONDS));
            proxy.wedge();
            // Time is the subject: let the heartbeat's validation get stuck on the wedged socket.
            assertTrue(probe.lost.poll(1_500, TimeUnit.MILLISECONDS) == null, "lost reported at once");
            assertClosesQuickly(n, "[" + driver + "] with a wedged socket");
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void closes_quickly_while_connecting_into_a_black_hole(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        Probe probe = new Probe();
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url());
                Notifier n = probe.create(driver.create(proxy.rewrite(TestDatabase.url()), Duration.ofSeconds(30)),
                        newChannel(), Duration.ofSeconds(1), () -> {})) {
            proxy.wedge();
            n.start();
            assertTrue(proxy.awaitAccepted(1, 10, TimeUnit.SECONDS), "the notifier is connecting");
            // Time is the subject: the first open is stuck in a connect that never answers.
            assertTrue(probe.listening.poll(300, TimeUnit.MILLISECONDS) == null);
            assertFalse(n.isListening());
            assertClosesQuickly(n, "[" + driver + "] while connecting into a black hole");
        }
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void closes_quickly_while_backing_off(Driver driver) throws Exception {
        assumeTrue(LoopbackProxy.isLoopback(TestDatabase.url()), "the proxy tests need a loopback database");
        Probe probe = new Probe();
        try (LoopbackProxy proxy = LoopbackProxy.inFrontOf(TestDatabase.url());
                Notifier n = probe.create(driver.create(proxy.rewrite(TestDatabase.url()), Duration.ofSeconds(2)),
                        newChannel(), Duration.ofSeconds(1), () -> {})) {
            proxy.drop();
            n.start();
            probe.awaitBackoff(3, Duration.ofSeconds(20));
            assertFalse(n.isListening());
            assertClosesQuickly(n, "[" + driver + "] while backing off");
            int attempts = proxy.accepted();
            // The thread is gone: no further attempts (time is the subject).
            assertTrue(probe.backoffs.poll(1_000, TimeUnit.MILLISECONDS) == null);
            assertEquals(attempts, proxy.accepted(), "connection attempts after close");
        }
    }

    @Test
    void close_before_start_and_start_after_close() {
        Notifier n = new Notifier(Driver.PGJDBC.create(TestDatabase.url()), newChannel(), Duration.ofSeconds(1),
                p -> {}, () -> {}, LongPollSignals.NONE);
        assertClosesQuickly(n, "before start");
        assertThrows(IllegalStateException.class, n::start);
    }

    @Test
    void start_twice_is_refused() {
        try (Notifier n = new Notifier(Driver.PGJDBC.create(TestDatabase.url()), newChannel(), Duration.ofSeconds(1),
                p -> {}, () -> {}, LongPollSignals.NONE)) {
            n.start();
            assertThrows(IllegalStateException.class, n::start);
        }
    }

    @Test
    void backoff_delays_double_up_to_the_cap_with_jitter() {
        for (int failures = 1; failures <= 30; failures++) {
            for (int k = 0; k < 50; k++) {
                assertBackoffShape(new long[] {failures, Notifier.backoffDelay(failures).toMillis()});
            }
        }
        long first = Notifier.backoffDelay(1).toMillis();
        assertTrue(first >= 50 && first <= 100, "first retry " + first + " ms");
        assertTrue(Notifier.backoffDelay(100).toMillis() <= 800);
    }
}
