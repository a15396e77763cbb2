package io.pgdurable.postgres.longpoll;

import static io.pgdurable.postgres.longpoll.LongPollHarness.LONG_LOCK;
import static io.pgdurable.postgres.longpoll.LongPollHarness.activity;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.Route;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A lease end that comes due is verified by a read-only scan before anything is woken: the lease end of an item
 * that was acked costs no claim, and the scan forgets every tracked lease end it supersedes; a crashed holder's item
 * is still reclaimed right after its lease ends, whether the lease end was announced in this process or arrived by
 * NOTIFY from another, and when the scan cannot answer.
 *
 * <p>Parked consumers here count their claims: each runs the provider's real claim (a zero-timeout fetch) inside
 * the provider's own long poller, so every claim a wake causes is seen.
 */
@Isolated("timing: reclaim latencies after lease ends are asserted in milliseconds")
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LeaseEndVerificationTest {
    private static final Duration POLL = Duration.ofSeconds(10);
    private static final Duration GET = Duration.ofSeconds(10);
    private static final long LEASE_MS = 300;
    private static final Duration LEASE = Duration.ofMillis(LEASE_MS);
    /** How long after its lease end a crashed holder's item must be back in a parked fetch's hands. */
    private static final long PROMPT_MS = 250;
    /** Neither the fallback probe nor the periodic scan runs within a test: only lease ends cause scans. */
    private static final UnaryOperator<PostgresProviderConfig.Builder> QUIET =
            b -> b.fallbackPollInterval(Duration.ofSeconds(30)).recoveryScanInterval(Duration.ofMinutes(10));

    @Test
    void lease_ends_of_acked_items_wake_nothing_and_one_scan_forgets_them_all() {
        try (LongPollHarness h = LongPollHarness.open("lpstale", QUIET)) {
            PostgresProvider p = h.provider;
            LongPoller poller = h.poller();
            h.warmUp();
            int verified = h.signals.verifications();
            long dropped = h.signals.leaseEndsDropped();
            for (int i = 0; i < 4; i++) {
                p.enqueueForWorker(activity("stale", i));
            }
            long s = System.currentTimeMillis();
            List<FetchedWorkItem> shortLeases = p.fetchWorkItems(LEASE, WorkBatch.upTo(2), null, TagFilter.any());
            long e = System.currentTimeMillis();
            List<FetchedWorkItem> longerLeases = p.fetchWorkItems(Duration.ofMillis(1_500), WorkBatch.upTo(2), null,
                    TagFilter.any());
            assertEquals(2, shortLeases.size());
            assertEquals(2, longerLeases.size());
            shortLeases.forEach(f -> p.ackWorkItem(f.lockToken(), null));
            longerLeases.forEach(f -> p.ackWorkItem(f.lockToken(), null));

            AtomicInteger claims = new AtomicInteger();
            List<BackgroundFetch<FetchedWorkItem>> consumers = List.of(parkCounting(h, "c1", claims),
                    parkCounting(h, "c2", claims));
            assertEquals(2, claims.get(), "each consumer claimed once before parking");
            long wakes = h.signals.wakes();

            h.signals.await(() -> h.signals.verifications() > verified, GET, "the verification of the ended leases");
            long at = h.signals.lastVerifiedMillis();
            // Lease ends fire timerLead early to start their verification ahead (it asks about the lease end's own
            // time): earlier than that is too early. No item is claimed early: the reclaim tests below check that.
            long lead = p.config().timerLead().toMillis();
            assertTrue(at >= s + LEASE_MS - lead, "verified " + (s + LEASE_MS - at) + " ms before the leases ended, "
                    + "more than the lead (" + lead + " ms)");
            assertTrue(at < e + LEASE_MS + PROMPT_MS, "verified " + (at - e - LEASE_MS) + " ms after the leases ended");
            assertEquals(wakes, h.signals.wakes(), "a lease end whose item was acked woke a fetch");
            assertEquals(2, claims.get(), "a lease end whose item was acked cost a claim");
            // The 1.5 s lease ends (and the warm-up's 60 s ones) were forgotten: nothing is left to come due, so
            // they will never cost anything either.
            assertTrue(h.signals.leaseEndsDropped() > dropped, "no tracked lease end was forgotten: " + h.signals);
            assertEquals(0, poller.trackedDeadlines(), "lease ends still tracked after the verification");
            assertEquals(verified + 1, h.signals.verifications(), "one verification for all of them");
            for (BackgroundFetch<FetchedWorkItem> c : consumers) {
                assertFalse(c.isDone(), c.describe());
            }
            System.out.println("[lp] stale lease ends verified " + (at - e - LEASE_MS) + ".." + (at - s - LEASE_MS)
                    + " ms after they ended; forgotten " + (h.signals.leaseEndsDropped() - dropped));

            // the consumers are alive: new work reaches one of them at once
            p.enqueueForWorker(activity("fresh", 9));
            BackgroundFetch<FetchedWorkItem> winner = awaitAnyDone(consumers);
            FetchedWorkItem got = winner.get(GET).orElseThrow(() -> new AssertionError("empty: " + winner.describe()));
            assertEquals(activity("fresh", 9), got.item());
            p.ackWorkItem(got.lockToken(), null);
            finish(consumers, winner);
        }
    }

    @Test
    void a_crashed_holders_item_is_reclaimed_right_after_its_lease_end_among_stale_ones() {
        try (LongPollHarness h = LongPollHarness.open("lpcrash", QUIET)) {
            PostgresProvider p = h.provider;
            h.warmUp();
            int verified = h.signals.verifications();
            p.enqueueForWorker(activity("gone", 1));
            p.enqueueForWorker(activity("gone", 2));
            p.enqueueForWorker(activity("crash", 3));
            // two items leased one by one and acked (stale lease ends just before the crash's), then the crash
            for (int i = 0; i < 2; i++) {
                FetchedWorkItem f = p.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.any()).orElseThrow();
                p.ackWorkItem(f.lockToken(), null);
            }
            long s = System.currentTimeMillis();
            FetchedWorkItem crashed = p.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.any()).orElseThrow();
            long e = System.currentTimeMillis();
            assertEquals(activity("crash", 3), crashed.item());

            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("reclaim", POLL);
            FetchedWorkItem again = w.get(GET).orElseThrow(() -> new AssertionError("never reclaimed: " + h.signals));
            assertEquals(crashed.item(), again.item());
            assertEquals(2, again.attemptCount());
            assertTrue(w.endMillis() >= s + LEASE_MS, "reclaimed " + (s + LEASE_MS - w.endMillis())
                    + " ms before the lease ended");
            assertTrue(w.endMillis() < e + LEASE_MS + PROMPT_MS, "reclaimed " + (w.endMillis() - e - LEASE_MS)
                    + " ms after the lease ended");
            h.signals.await(() -> h.signals.verifications() > verified, GET, "the verification of the lease end");
            System.out.println("[lp] crash among stale lease ends: reclaimed " + (w.endMillis() - e - LEASE_MS) + ".."
                    + (w.endMillis() - s - LEASE_MS) + " ms after the lease end");
            p.ackWorkItem(again.lockToken(), null);
        }
    }

    @Test
    void a_lease_end_announced_by_another_process_is_verified_there_and_reclaims_only_the_crashed_item() {
        try (LongPollHarness a = LongPollHarness.open("lpremote", QUIET);
             LongPollHarness b = LongPollHarness.onSchema(a.schema, QUIET)) {
            PostgresProvider pa = a.provider;
            a.warmUp();
            for (int i = 0; i < 3; i++) {
                pa.enqueueForWorker(activity("remote", i));
            }
            int notes = b.signals.notificationCount();
            // one claim of three items in A: one lease end for all of them; two are acked, A "crashes" on the third
            long s = System.currentTimeMillis();
            List<FetchedWorkItem> held = pa.fetchWorkItems(LEASE, WorkBatch.upTo(3), null, TagFilter.any());
            long e = System.currentTimeMillis();
            assertEquals(3, held.size());
            pa.ackWorkItem(held.get(0).lockToken(), null);
            pa.ackWorkItem(held.get(1).lockToken(), null);
            FetchedWorkItem crashed = held.get(2);
            // B hears of the lease end by NOTIFY (after the enqueues' hints: they were sent at once, it waited)
            b.signals.await(() -> b.signals.notificationsSince(notes).stream().anyMatch(n -> isLeaseEnd(n, s, e)),
                    GET, "A's lease-end notification at B");
            int verified = b.signals.verifications();
            AtomicInteger claims = new AtomicInteger();
            List<BackgroundFetch<FetchedWorkItem>> consumers = List.of(parkCounting(b, "b1", claims),
                    parkCounting(b, "b2", claims));
            assertEquals(2, claims.get(), "each consumer claimed once before parking");
            long wakes = b.signals.wakes();

            BackgroundFetch<FetchedWorkItem> winner = awaitAnyDone(consumers);
            FetchedWorkItem again = winner.get(GET).orElseThrow(() -> new AssertionError("empty: " + b.signals));
            assertEquals(crashed.item(), again.item());
            assertTrue(winner.endMillis() >= s + LEASE_MS, "reclaimed " + (s + LEASE_MS - winner.endMillis())
                    + " ms before the lease ended");
            assertTrue(winner.endMillis() < e + LEASE_MS + PROMPT_MS, "reclaimed "
                    + (winner.endMillis() - e - LEASE_MS) + " ms after the lease ended");
            b.signals.await(() -> b.signals.verifications() > verified, GET, "B's verification of the lease end");
            assertEquals(1, b.signals.wakes() - wakes, "one wake for the one claimable item, none for the acked "
                    + "ones: " + b.signals);
            assertEquals(3, claims.get(), "one claim after the lease end, the one that reclaimed the item");
            System.out.println("[lp] lease end by NOTIFY: crashed item reclaimed in the other process "
                    + (winner.endMillis() - e - LEASE_MS) + ".." + (winner.endMillis() - s - LEASE_MS)
                    + " ms after the lease end");
            b.provider.ackWorkItem(again.lockToken(), null);
            finish(consumers, winner);
        }
    }

    /**
     * The scan counts claimable items up to 64 and routes by what it counted: behind 64 items of a tag nobody here
     * consumes, an untagged item whose lease ended is not among them, so the answer cannot vouch for it and the
     * lease end wakes a fetch itself.
     */
    @Test
    void a_crashed_item_behind_a_capped_count_of_items_nobody_here_takes_is_reclaimed_at_its_lease_end() {
        try (LongPollHarness h = LongPollHarness.open("lpcapped", QUIET)) {
            PostgresProvider p = h.provider;
            h.warmUp();
            List<io.pgdurable.spi.WorkItem> gpu = new ArrayList<>();
            for (int i = 0; i < 70; i++) {
                gpu.add(LongPollHarness.activity("gpu", i, null, "gpu"));
            }
            p.enqueueAllForWorker(gpu);
            p.enqueueForWorker(activity("crash", 100));
            long s = System.currentTimeMillis();
            FetchedWorkItem crashed = p.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.defaultOnly())
                    .orElseThrow();
            long e = System.currentTimeMillis();
            assertEquals(activity("crash", 100), crashed.item());
            int verified = h.signals.verifications();
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("untagged", POLL, null, TagFilter.defaultOnly());
            FetchedWorkItem again = w.get(GET).orElseThrow(() -> new AssertionError("never reclaimed: " + h.signals));
            assertEquals(crashed.item(), again.item());
            assertTrue(w.endMillis() >= s + LEASE_MS, "reclaimed " + (s + LEASE_MS - w.endMillis())
                    + " ms before the lease ended");
            assertTrue(w.endMillis() < e + LEASE_MS + PROMPT_MS, "reclaimed " + (w.endMillis() - e - LEASE_MS)
                    + " ms after the lease ended (fallback 30 s)");
            h.signals.await(() -> h.signals.verifications() > verified, GET, "the verification of the lease end");
            p.ackWorkItem(again.lockToken(), null);
        }
    }

    @Test
    void when_the_verifying_scan_times_out_the_lease_end_wakes_a_fetch_as_before() throws Exception {
        try (LongPollHarness h = LongPollHarness.open("lpverifyfail", QUIET)) {
            PostgresProvider p = h.provider;
            h.warmUp();
            p.enqueueForWorker(activity("crash", 1));
            FetchedWorkItem crashed = p.fetchWorkItem(LEASE, Duration.ZERO, null, TagFilter.any()).orElseThrow();
            BackgroundFetch<FetchedWorkItem> w = h.parkWorker("reclaim", POLL);
            int timedOut = h.signals.scansTimedOut();
            long wakes = h.signals.wakes();
            try (Connection blocker = TestDatabase.connect()) {
                blocker.setAutoCommit(false);
                try (Statement st = blocker.createStatement()) {
                    // the scan reads the orchestrator leases and now waits for this lock; the worker claim does not
                    st.execute("LOCK TABLE " + LongPollProviderTest.quote(h.schema) + ".instance_locks IN ACCESS "
                            + "EXCLUSIVE MODE");
                }
                h.signals.await(() -> h.signals.scansTimedOut() > timedOut, GET, "the verifying scan to time out");
                FetchedWorkItem again = w.get(GET).orElseThrow(() -> new AssertionError("never reclaimed: "
                        + h.signals));
                assertEquals(crashed.item(), again.item());
                assertTrue(h.signals.wakes() > wakes, "reclaimed without a wake: " + h.signals);
                blocker.rollback();
                p.ackWorkItem(again.lockToken(), null);
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    /** A worker lease end ({@code w|at|0|…}) of a claim made between {@code s} and {@code e}. */
    private static boolean isLeaseEnd(String payload, long s, long e) {
        String[] f = payload.split("\\|");
        if (!f[0].equals("w") || f.length < 3 || !f[2].equals("0")) {
            return false;
        }
        long at = Long.parseLong(f[1]);
        return at >= s + LEASE_MS && at <= e + LEASE_MS;
    }

    /** A parked worker consumer whose every claim (the provider's real one) is counted in {@code claims}. */
    private static BackgroundFetch<FetchedWorkItem> parkCounting(LongPollHarness h, String name,
                                                                 AtomicInteger claims) {
        PostgresProvider p = h.provider;
        LongPoller poller = h.poller();
        return BackgroundFetch.start(name, () -> poller.fetch(QueueKind.WORKER, Route.worker(TagFilter.any(), false),
                POLL, "fetchWorkItem", () -> {
                    claims.incrementAndGet();
                    return p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, TagFilter.any());
                })).awaitParked(Duration.ofSeconds(5));
    }

    private static BackgroundFetch<FetchedWorkItem> awaitAnyDone(List<BackgroundFetch<FetchedWorkItem>> fetches) {
        List<BackgroundFetch<FetchedWorkItem>> done = new ArrayList<>();
        Waits.until(() -> {
            for (BackgroundFetch<FetchedWorkItem> f : fetches) {
                if (f.isDone()) {
                    done.add(f);
                    return true;
                }
            }
            return false;
        }, GET, () -> "any of " + fetches.size() + " fetches to return");
        return done.get(0);
    }

    /** The others were never woken: interrupted, they return empty. */
    private static void finish(List<BackgroundFetch<FetchedWorkItem>> consumers,
                               BackgroundFetch<FetchedWorkItem> winner) {
        for (BackgroundFetch<FetchedWorkItem> c : consumers) {
            if (c != winner) {
                assertFalse(c.isDone(), c.describe());
                c.interrupt();
                assertEquals(Optional.empty(), c.get(GET));
            }
        }
    }
}
