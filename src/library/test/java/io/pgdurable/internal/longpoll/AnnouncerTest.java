package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The announcer's sending loop, with a sender that fails on demand (the database path is in AnnouncementsTest). */
class AnnouncerTest {

    @Test
    void a_failed_send_is_retried_after_its_backoff_without_waiting_for_new_hints() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        BlockingQueue<List<String>> sent = new LinkedBlockingQueue<>();
        Announcer.Sender failingOnce = payloads -> {
            if (attempts.incrementAndGet() == 1) {
                throw new java.sql.SQLException("connection refused", "08001");
            }
            sent.add(List.copyOf(payloads));
        };
        Announcer announcer = new Announcer(null, failingOnce, null, null, "test", LongPollSignals.NONE,
                Clock.systemUTC());
        try {
            long now = System.currentTimeMillis();
            announcer.announce(new Hint(QueueKind.WORKER, now, 1, true, java.util.Set.of(), false, 0), now);
            List<String> retried = sent.poll(5, TimeUnit.SECONDS);
            assertTrue(retried != null, "the failed batch was not sent again (attempts: " + attempts.get() + ")");
            assertEquals(2, attempts.get());
            assertEquals(1, retried.size(), retried.toString());
            assertTrue(retried.get(0).startsWith("w|" + now + "|1|1||0|"), retried.toString());
        } finally {
            announcer.close();
        }
    }

    @Test
    void due_hints_of_one_route_go_out_as_one_payload_and_future_ones_keep_their_time() throws Exception {
        java.util.concurrent.CountDownLatch firstSendStarted = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch releaseFirst = new java.util.concurrent.CountDownLatch(1);
        BlockingQueue<List<String>> sent = new LinkedBlockingQueue<>();
        Announcer.Sender blockingFirst = payloads -> {
            sent.add(List.copyOf(payloads));
            if (firstSendStarted.getCount() > 0) {
                firstSendStarted.countDown();
                releaseFirst.await(5, TimeUnit.SECONDS);
            }
        };
        Announcer announcer = new Announcer(null, blockingFirst, null, null, "test", LongPollSignals.NONE,
                Clock.systemUTC());
        try {
            long now = System.currentTimeMillis();
            announcer.announce(new Hint(QueueKind.WORKER, now, 1, true, java.util.Set.of(), false, 0), now);
            assertTrue(firstSendStarted.await(5, TimeUnit.SECONDS), "the first send");
            // While it is out, three due hints of one route (different times) and a future one queue up.
            announcer.announce(new Hint(QueueKind.WORKER, now - 2, 1, true, java.util.Set.of(), false, 0), now);
            announcer.announce(new Hint(QueueKind.WORKER, now - 1, 2, true, java.util.Set.of(), false, 0), now);
            announcer.announce(new Hint(QueueKind.WORKER, now, 3, true, java.util.Set.of(), false, 0), now);
            announcer.announce(new Hint(QueueKind.WORKER, now + 60_000, 1, true, java.util.Set.of(), false, 0),
                    now);
            releaseFirst.countDown();
            assertEquals(1, sent.poll(5, TimeUnit.SECONDS).size(), "the first batch");
            List<String> second = sent.poll(5, TimeUnit.SECONDS);
            assertTrue(second != null, "the queued hints were not sent");
            assertEquals(2, second.size(), "one payload for the due route, one for the future hint: " + second);
            assertTrue(second.stream().anyMatch(p -> p.startsWith("w|" + now + "|6|1||0|")), second.toString());
            assertTrue(second.stream().anyMatch(p -> p.startsWith("w|" + (now + 60_000) + "|1|1||0|")),
                    second.toString());
        } finally {
            announcer.close();
        }
    }

    @Test
    void a_lease_end_behind_one_already_told_is_not_told_again() throws Exception {
        BlockingQueue<String> sent = new LinkedBlockingQueue<>();
        Announcer announcer = new Announcer(null, payloads -> sent.addAll(payloads), null, null, "test",
                LongPollSignals.NONE, Clock.systemUTC());
        try {
            long now = System.currentTimeMillis();
            for (int i = 0; i < 50; i++) { // fifty claims, each announcing its lease end a little later
                announcer.announce(new Hint(QueueKind.WORKER, now + 60_000 + i, 0, true, null, true, 0), now);
            }
            announcer.announce(new Hint(QueueKind.WORKER, now + 30_000, 0, true, null, true, 0), now);
            announcer.announce(new Hint(QueueKind.ORCHESTRATOR, now + 61_000, 0, true, null, false, 0), now);
            announcer.announce(new Hint(QueueKind.WORKER, now + 90_000, 1, true, null, false, 0), now);
            java.util.Set<String> got = new java.util.HashSet<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (got.size() < 4 && System.nanoTime() < deadline) {
                String p = sent.poll(100, TimeUnit.MILLISECONDS);
                if (p != null) {
                    got.add(p.substring(0, p.lastIndexOf('|')));
                }
            }
            assertEquals(java.util.Set.of("w|" + (now + 60_000) + "|0|1|*|1", "w|" + (now + 30_000) + "|0|1|*|1",
                    "o|" + (now + 61_000) + "|0", "w|" + (now + 90_000) + "|1|1|*|0"), got,
                    "the first lease end, an earlier one, the other queue's and an item hint; the 49 later lease "
                            + "ends are left to the receivers' verification at the first");
            assertEquals(null, sent.poll(300, TimeUnit.MILLISECONDS), "nothing else");
        } finally {
            announcer.close();
        }
    }
}
