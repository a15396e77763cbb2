package io.pgdurable.longpoll;

/**
 * A read-only view of one provider's long polling, for metrics, dashboards and tests
 * ({@code PostgresProvider.longPolling()}, present while long polling is on). Every reading is a snapshot taken
 * without waiting; readings are cheap enough for a metrics scrape, and none of them changes what long polling does.
 */
public interface LongPollView {

    /** True while the listener connection is up and LISTENing; false while it reconnects (fetches then fall back). */
    boolean isListening();

    /** Fetches registered with long polling right now, on both queues (parked, or claiming after a wake). */
    int parkedFetches();

    /** Fetches registered with long polling on {@code queue} right now (parked, or claiming after a wake). */
    int parkedFetches(QueueKind queue);

    /**
     * Future wake-up times held in memory right now (delayed items' visibility, lease ends), at most the
     * configuration's {@code maxTrackedDeadlines}.
     */
    int trackedDeadlines();

    /** Wakes handed to parked fetches since the provider started, whatever woke them (wakes per item = this / items). */
    long wakesIssued();
}
