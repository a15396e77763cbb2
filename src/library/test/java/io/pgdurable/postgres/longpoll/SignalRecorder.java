package io.pgdurable.postgres.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Records what the long-poll machinery reports, so tests wait on events (listening, scans, notifications, wakes)
 * instead of sleeping. Every wait is bounded and fails with a message saying what did not happen.
 */
final class SignalRecorder implements LongPollSignals {
    private final Object monitor = new Object();
    private final AtomicInteger listens = new AtomicInteger();
    private final AtomicInteger reconnects = new AtomicInteger();
    private final AtomicInteger connectionsLost = new AtomicInteger();
    private final AtomicInteger scansOk = new AtomicInteger();
    private final AtomicInteger scansTimedOut = new AtomicInteger();
    private final AtomicLong fallbackPolls = new AtomicLong();
    private final AtomicLong wakes = new AtomicLong();
    private final List<WakeSource> wakeSources = new CopyOnWriteArrayList<>();
    private final List<Long> deadlineWakeMillis = new CopyOnWriteArrayList<>();
    private final List<Long> probeWakeMillis = new CopyOnWriteArrayList<>();
    private final AtomicLong claimsSkipped = new AtomicLong();
    private final AtomicLong uselessWakes = new AtomicLong();
    private final AtomicInteger verifications = new AtomicInteger();
    private final AtomicLong leaseEndsDropped = new AtomicLong();
    private volatile long lastVerifiedMillis;
    private final List<String> notifications = new ArrayList<>();
    private final List<Integer> takersRegistered = new CopyOnWriteArrayList<>();
    private final AtomicInteger handOffsTaken = new AtomicInteger();
    private final AtomicInteger handOffsGivenBack = new AtomicInteger();
    private final AtomicInteger handOffsHeld = new AtomicInteger();

    @Override
    public void takersRegistered(int waiting) {
        takersRegistered.add(waiting);
        changed();
    }

    @Override
    public void handOffReceived(boolean taken) {
        (taken ? handOffsTaken : handOffsGivenBack).incrementAndGet();
        changed();
    }

    @Override
    public void handOffsHeld(int items) {
        handOffsHeld.addAndGet(items);
        changed();
    }

    /** When each wake by a deadline was handed out (the system clock), oldest first. */
    List<Long> deadlineWakeMillis() {
        return List.copyOf(deadlineWakeMillis);
    }

    /** Wall-clock times of the wakes the probe's answers handed out (a lease end's verification among them). */
    List<Long> probeWakeMillis() {
        return List.copyOf(probeWakeMillis);
    }

    /** The counts of parked takers written so far (hand-over across processes), oldest first. */
    List<Integer> takersRegistered() {
        return List.copyOf(takersRegistered);
    }

    /** The last count of parked takers written, or -1 before the first. */
    private final java.util.concurrent.atomic.AtomicInteger announced = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger unheard = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public void announced(int payloads) {
        announced.addAndGet(payloads);
    }

    @Override
    public void announcedInline(int payloads) {
        announced.addAndGet(payloads);
    }

    @Override
    public void announcementsUnheard(int payloads) {
        unheard.addAndGet(payloads);
        changed();
    }

    /** Announcement payloads sent (by the announcer's thread or inside a write). */
    int announced() {
        return announced.get();
    }

    /** Announcement payloads not sent because no other process listened. */
    int unheard() {
        return unheard.get();
    }

    int lastTakersRegistered() {
        List<Integer> all = takersRegistered;
        return all.isEmpty() ? -1 : all.get(all.size() - 1);
    }

    int handOffsTaken() {
        return handOffsTaken.get();
    }

    int handOffsGivenBack() {
        return handOffsGivenBack.get();
    }

    /** Items handed over by other processes whose short lease this process extended to its fetch's lock time. */
    int handOffsHeld() {
        return handOffsHeld.get();
    }

    @Override
    public void listening(boolean reconnect) {
        listens.incrementAndGet();
        if (reconnect) {
            reconnects.incrementAndGet();
        }
        changed();
    }

    @Override
    public void connectionLost(Throwable cause) {
        connectionsLost.incrementAndGet();
        changed();
    }

    @Override
    public void notification(String payload) {
        synchronized (monitor) {
            notifications.add(payload);
            monitor.notifyAll();
        }
    }

    @Override
    public void scanFinished(boolean timedOut) {
        (timedOut ? scansTimedOut : scansOk).incrementAndGet();
        changed();
    }

    @Override
    public void fallbackPoll() {
        fallbackPolls.incrementAndGet();
        changed();
    }

    @Override
    public void leaseEndsVerified(int dropped) {
        lastVerifiedMillis = System.currentTimeMillis();
        leaseEndsDropped.addAndGet(dropped);
        verifications.incrementAndGet();
        changed();
    }

    @Override
    public void waiterWoken(QueueKind queue, WakeSource source) {
        if (source == WakeSource.DEADLINE) {
            deadlineWakeMillis.add(System.currentTimeMillis());
        } else if (source == WakeSource.PROBE) {
            probeWakeMillis.add(System.currentTimeMillis());
        }
        wakeSources.add(source);
        waiterWoken(queue.label());
    }

    @Override
    public void waiterWoken(String queue) {
        wakes.incrementAndGet();
        changed();
    }

    private void changed() {
        synchronized (monitor) {
            monitor.notifyAll();
        }
    }

    int listens() {
        return listens.get();
    }

    int reconnects() {
        return reconnects.get();
    }

    int connectionsLost() {
        return connectionsLost.get();
    }

    int scansOk() {
        return scansOk.get();
    }

    int scansTimedOut() {
        return scansTimedOut.get();
    }

    int scansFinished() {
        return scansOk.get() + scansTimedOut.get();
    }

    long fallbackPolls() {
        return fallbackPolls.get();
    }

    @Override
    public void uselessWake(QueueKind queue) {
        uselessWakes.incrementAndGet();
        changed();
    }

    /** Woken fetches that claimed and found nothing. */
    long uselessWakes() {
        return uselessWakes.get();
    }

    @Override
    public void claimSkipped(String queue) {
        claimsSkipped.incrementAndGet();
    }

    long claimsSkipped() {
        return claimsSkipped.get();
    }

    long wakes() {
        return wakes.get();
    }

    /** What woke parked fetches, in order, from the {@code index}-th wake on. */
    List<WakeSource> wakeSourcesSince(int index) {
        List<WakeSource> all = List.copyOf(wakeSources);
        return all.subList(Math.min(index, all.size()), all.size());
    }

    /** Verifications of due lease ends answered so far. */
    int verifications() {
        return verifications.get();
    }

    /** Tracked lease ends the verifications forgot, in all. */
    long leaseEndsDropped() {
        return leaseEndsDropped.get();
    }

    /** Wall-clock time of the latest verification's answer. */
    long lastVerifiedMillis() {
        return lastVerifiedMillis;
    }

    int notificationCount() {
        synchronized (monitor) {
            return notifications.size();
        }
    }

    List<String> notificationsSince(int index) {
        synchronized (monitor) {
            return List.copyOf(notifications.subList(Math.min(index, notifications.size()), notifications.size()));
        }
    }

    /** Waits until {@code condition} holds (re-checked on every signal and at least every 5 ms). */
    void await(BooleanSupplier condition, Duration timeout, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (monitor) {
            while (!condition.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what
                            + " (" + this + ")");
                }
                try {
                    monitor.wait(Math.max(1, Math.min(5, TimeUnit.NANOSECONDS.toMillis(left))));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted while waiting for " + what, e);
                }
            }
        }
    }

    void awaitListening(Duration timeout) {
        await(() -> listens.get() > 0, timeout, "the listener to LISTEN");
    }

    @Override
    public String toString() {
        return "signals{listens=" + listens + ", lost=" + connectionsLost + ", scansOk=" + scansOk + ", scansTimedOut="
                + scansTimedOut + ", fallbackPolls=" + fallbackPolls + ", wakes=" + wakes + ", verifications="
                + verifications + ", leaseEndsDropped=" + leaseEndsDropped + ", notifications="
                + notificationCount() + "}";
    }
}
