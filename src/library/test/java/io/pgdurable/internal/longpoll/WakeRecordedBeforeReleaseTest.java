package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Whoever sees a parked fetch return must also see what woke it: tests (and metrics readers) read the wake signals
 * right after a fetch returns. The registry therefore records a wake before it releases the fetch. Each case holds
 * the signal callback open for a bounded while and checks that the fetch is still parked during it; released
 * first, the fetch would return within that while. No database is involved: this is the registry's own ordering.
 */
class WakeRecordedBeforeReleaseTest {
    /** How long the callback gives a wrongly released fetch to return; the passing case waits this long. */
    private static final long HOLD_MS = 300;
    private static final long BOUND_S = 5;

    /** Signals that, on each wake, watch for the fetch to return while the wake is still being recorded. */
    private static final class Watching implements LongPollSignals {
        final CountDownLatch returned = new CountDownLatch(1);
        final List<Boolean> returnedWhileRecording = new CopyOnWriteArrayList<>();
        final List<WakeSource> sources = new CopyOnWriteArrayList<>();

        @Override
        public void waiterWoken(QueueKind queue, WakeSource source) {
            sources.add(source);
            try {
                returnedWhileRecording.add(returned.await(HOLD_MS, TimeUnit.MILLISECONDS));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                returnedWhileRecording.add(true);
            }
        }
    }

    private static CompletableFuture<Object> park(Waiter w, Watching signals) {
        CompletableFuture<Object> result = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            Object got = w.await(TimeUnit.SECONDS.toNanos(BOUND_S));
            signals.returned.countDown();
            result.complete(got);
        }, "parked-fetch");
        t.setDaemon(true);
        t.start();
        return result;
    }

    @Test
    void a_hint_is_recorded_as_a_wake_before_the_woken_fetch_returns() throws Exception {
        Watching signals = new Watching();
        WaiterRegistry registry = new WaiterRegistry(8, signals);
        Waiter w = registry.register(QueueKind.ORCHESTRATOR, Route.ORCHESTRATOR, null, "fetchOrchestrationItem");
        CompletableFuture<Object> fetch = park(w, signals);

        Hint hint = Hint.anything(QueueKind.ORCHESTRATOR, 0, 1);
        assertEquals(1, registry.wake(hint, null, WakeSource.NOTIFICATION));

        assertEquals(hint, fetch.get(BOUND_S, TimeUnit.SECONDS));
        assertEquals(List.of(WakeSource.NOTIFICATION), signals.sources);
        assertEquals(List.of(false), signals.returnedWhileRecording, "the fetch returned before its wake was recorded");
    }

    @Test
    void every_fetch_one_hint_wakes_returns_only_after_the_wakes_are_recorded() throws Exception {
        Watching signals = new Watching();
        WaiterRegistry registry = new WaiterRegistry(8, signals);
        Waiter first = registry.register(QueueKind.ORCHESTRATOR, Route.ORCHESTRATOR, null, "fetchOrchestrationItem");
        Waiter second = registry.register(QueueKind.ORCHESTRATOR, Route.ORCHESTRATOR, null, "fetchOrchestrationItem");
        CompletableFuture<Object> a = park(first, signals);
        CompletableFuture<Object> b = park(second, signals);

        assertEquals(2, registry.wake(Hint.anything(QueueKind.ORCHESTRATOR, 0, 2), null, WakeSource.SCAN));

        assertInstanceOf(Hint.class, a.get(BOUND_S, TimeUnit.SECONDS));
        assertInstanceOf(Hint.class, b.get(BOUND_S, TimeUnit.SECONDS));
        assertEquals(List.of(false, false), signals.returnedWhileRecording);
    }

    @Test
    void a_hand_over_is_recorded_as_a_wake_before_the_fetch_returns_the_item() throws Exception {
        Watching signals = new Watching();
        WaiterRegistry registry = new WaiterRegistry(8, signals);
        Object takes = "claim request";
        Waiter w = registry.register(QueueKind.WORKER, hint -> true, takes, "fetchWorkItem");
        AtomicReference<Reservation> reservation = new AtomicReference<>();
        CompletableFuture<Object> fetch = park(w, signals);
        // The fetch marks itself parked as its first step; reserve as soon as that has happened.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_S);
        while (reservation.get() == null && System.nanoTime() < until) {
            Waiter reserved = registry.reserve(QueueKind.WORKER, t -> t == takes);
            if (reserved != null) {
                reservation.set(new Reservation(registry, QueueKind.WORKER, reserved));
            } else {
                Thread.onSpinWait();
            }
        }
        assertNotNull(reservation.get(), "the fetch never parked");

        assertTrue(reservation.get().handOver("the item"));

        Object got = fetch.get(BOUND_S, TimeUnit.SECONDS);
        assertEquals(new Waiter.Delivered("the item"), got);
        assertEquals(List.of(WakeSource.HANDOVER), signals.sources);
        assertFalse(signals.returnedWhileRecording.get(0), "the fetch returned before its hand-over was recorded");
    }
}
