package io.pgdurable.longpoll;

import java.time.Duration;

/**
 * Observable moments of the long-poll machinery, so tests (and metrics) wait on events instead of sleeping.
 * Every method has a no-op default; implementations must return quickly and never throw.
 */
public interface LongPollSignals {
    LongPollSignals NONE = new LongPollSignals() {};

    /** LISTEN is active on a fresh connection ({@code reconnect}: not the first one). */
    default void listening(boolean reconnect) {}

    /** The listener connection was found dead. */
    default void connectionLost(Throwable cause) {}

    /** The next connection attempt waits {@code delay} after {@code failures} consecutive failures. */
    default void backoff(int failures, Duration delay) {}

    /** A notification arrived (before routing). */
    default void notification(String payload) {}

    /** A timer scan ended; {@code timedOut} when the server cancelled it (lock or statement timeout). */
    default void scanFinished(boolean timedOut) {}

    /** The one-second fallback probe ran. */
    default void fallbackPoll() {}

    /**
     * Lease ends that came due were verified (they woke no fetch themselves; what the database called claimable
     * did): {@code dropped} tracked lease ends the answering scan superseded were forgotten (0 when the probe found
     * claimable work: the scan then follows a cadence later).
     */
    default void leaseEndsVerified(int dropped) {}

    /** A parked fetch was woken (queue "orchestrator" or "worker"). */
    default void waiterWoken(String queue) {}

    /**
     * A parked fetch was woken, and by what. The provider calls this one; by default it reports to
     * {@link #waiterWoken(String)}, so observers written before sources existed keep counting.
     */
    default void waiterWoken(QueueKind queue, WakeSource source) {
        waiterWoken(queue.label());
    }

    /** A woken fetch claimed and found nothing (the item went to another fetch, or the hint was stale). */
    default void uselessWake(QueueKind queue) {}

    /** A long-polled fetch was refused: {@code maxParkedWaiters} fetches were already parked. */
    default void capacityRefused(QueueKind queue) {}

    /** A fetch parked without its first claim: nothing was announced since the same claim found nothing. */
    default void claimSkipped(String queue) {}

    /** A transaction of {@code payloads} announcements was sent to other processes. */
    default void announced(int payloads) {}

    /**
     * {@code payloads} announcements were handed to a write, to be sent inside its own transaction (the announcer
     * was idle); they reach other processes if and when that write commits.
     */
    default void announcedInline(int payloads) {}

    /** {@code hints} hints were queued for the announcer's thread to send to other processes. */
    default void announcementsQueued(int hints) {}

    /**
     * {@code payloads} announcements were not sent: no other process listened on the channel (docs/long-polling.md,
     * "Announcing only to listeners").
     */
    default void announcementsUnheard(int payloads) {}

    /** A notifying transaction of {@code payloads} announcements failed; the same batch is retried after a backoff. */
    default void announceFailed(int payloads) {}

    /**
     * Hand-over across processes: this process's account of its parked takers was written, {@code waiting} of them
     * (0: none, or the listener is down).
     */
    default void takersRegistered(int waiting) {}

    /**
     * Hand-over across processes: another process handed this one an item; {@code taken} when a parked fetch returned
     * it, false when none was left for it and it was given back.
     */
    default void handOffReceived(boolean taken) {}

    /**
     * Hand-over across processes: {@code items} items other processes handed to this one were held for their
     * fetches' lock times (the enqueue leased each for a few seconds only).
     */
    default void handOffsHeld(int items) {}

    /**
     * Both observers, each told every moment ({@code first} before {@code second}); {@link #NONE} on either side
     * gives the other one itself, so an unobserved provider pays no extra call.
     */
    static LongPollSignals both(LongPollSignals first, LongPollSignals second) {
        if (first == null || first == NONE) {
            return second == null ? NONE : second;
        }
        if (second == null || second == NONE) {
            return first;
        }
        return new SignalsPair(first, second);
    }
}
