package io.pgdurable.postgres.longpoll;

import static io.pgdurable.postgres.longpoll.LongPollHarness.LONG_LOCK;
import static io.pgdurable.postgres.longpoll.LongPollHarness.activity;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.longpoll.WakeSource;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Announcing only to listeners (docs/long-polling.md): a provider whose listener is the only one on its channel sends
 * no NOTIFY for its writes (its own fetches are woken in memory), and starts sending as soon as another process
 * listens. The tests' fallback probe is 30 s, so a wake within seconds is the notification's.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AnnouncingToListenersTest {
    private static final Duration POLL = Duration.ofSeconds(20);
    private static final Duration GET = Duration.ofSeconds(10);
    private static final Duration QUIET_PROBE = Duration.ofSeconds(30);

    @Test
    void a_provider_alone_sends_nothing_and_still_wakes_its_own_fetches() throws Exception {
        try (LongPollHarness h = LongPollHarness.open("alone", b -> b.fallbackPollInterval(QUIET_PROBE)
                .handOverAcrossProcesses(false))) {
            int announcedBefore = h.signals.announced();
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("worker", POLL).awaitParked(GET);
            int wakes = (int) h.signals.wakes();
            // A batched enqueue is announced, never handed over: the local wake is the announcement's.
            h.provider.enqueueAllForWorker(List.of(activity("alone", 1)));
            assertEquals(activity("alone", 1), w.get(GET).orElseThrow().item());
            assertEquals(List.of(WakeSource.ANNOUNCEMENT), h.signals.wakeSourcesSince(wakes));
            h.signals.await(() -> h.signals.unheard() >= 1, GET, "the announcement nobody else would hear");
            assertEquals(announcedBefore, h.signals.announced(), "nothing was sent to other processes");
        }
    }

    @Test
    void a_second_process_that_starts_listening_is_told_of_the_first_ones_writes() throws Exception {
        try (LongPollHarness writer = LongPollHarness.open("arrive", b -> b.fallbackPollInterval(QUIET_PROBE)
                .handOverAcrossProcesses(false))) {
            // Alone first: the writer finds out that nobody else listens.
            writer.provider.enqueueAllForWorker(List.of(activity("arrive", 1)));
            writer.signals.await(() -> writer.signals.unheard() >= 1, GET, "the writer found itself alone");
            writer.provider.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, io.pgdurable.spi.TagFilter.any())
                    .orElseThrow();
            try (LongPollHarness reader = LongPollHarness.onSchema(writer.schema, b -> b.fallbackPollInterval(
                    QUIET_PROBE).handOverAcrossProcesses(false))) {
                BackgroundFetch<FetchedWorkItem> w = reader.parkWorker("reader", POLL).awaitParked(GET);
                int wakes = (int) reader.signals.wakes();
                WorkItem.ActivityExecute item = activity("arrive", 2);
                long before = System.nanoTime();
                writer.provider.enqueueAllForWorker(List.of(item));
                assertEquals(item, w.get(GET).orElseThrow().item());
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
                assertEquals(List.of(WakeSource.NOTIFICATION), reader.signals.wakeSourcesSince(wakes));
                assertTrue(tookMs < 5_000, "woken by the writer's NOTIFY, not the 30 s probe: " + tookMs + " ms");
                // Counted once the send returned, which may be after the reader woke.
                writer.signals.await(() -> writer.signals.announced() >= 1, GET, "the writer's send to the reader");
            }
        }
    }

    @Test
    void a_raw_listener_holding_the_listener_lock_counts_as_another_process() throws Exception {
        try (LongPollHarness h = LongPollHarness.open("rawjoin", b -> b.fallbackPollInterval(QUIET_PROBE)
                .handOverAcrossProcesses(false));
             java.sql.Connection other = TestDatabase.connect()) {
            int notes = h.signals.notificationCount();
            TestDatabase.listenAsAnotherProcess(other, h.schema);
            h.signals.await(() -> h.signals.notificationCount() > notes, GET, "the arrival's notification");
            int announcedBefore = h.signals.announced();
            h.provider.enqueueAllForWorker(List.of(activity("rawjoin", 1)));
            h.signals.await(() -> h.signals.announced() > announcedBefore, GET, "the announcement to the other");
            org.postgresql.PGNotification[] got = null;
            long deadline = System.nanoTime() + GET.toNanos();
            while ((got == null || got.length == 0) && System.nanoTime() < deadline) {
                got = other.unwrap(org.postgresql.PGConnection.class).getNotifications(250);
            }
            assertTrue(got != null && got.length > 0 && got[0].getParameter().startsWith("w|"),
                    "the other listener heard the worker hint");
        }
    }
}
