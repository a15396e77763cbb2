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

    /** A fetch parked without its first claim: nothing was announced since the same claim found nothing. */
    default void claimSkipped(String queue) {}

    /** A transaction of {@code payloads} announcements was sent to other processes. */
    default void announced(int payloads) {}

    /**
     * {@code payloads} announcements were handed to a write, to be sent inside its own transaction (the announcer
     * was idle); they reach other processes if and when that write commits.
     */
    default void announcedInline(int payloads) {}
}
