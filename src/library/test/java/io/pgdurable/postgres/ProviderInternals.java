package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.LongPoller;

/** What the library's tests reach inside a provider beyond its public surface. */
public final class ProviderInternals {
    private ProviderInternals() {}

    /** The provider's long-poll engine; fails when long polling is off. */
    public static LongPoller longPoller(PostgresProvider provider) {
        LongPoller poller = provider.longPollEngine();
        if (poller == null) {
            throw new IllegalStateException("long polling is off for this provider");
        }
        return poller;
    }

    /** How long a fall of a provider's parked takers must rest before its row of takers says so, in milliseconds. */
    public static long takersFallSettleMillis() {
        return java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(RemoteHandOver.FALL_SETTLE_NANOS);
    }

    /** How long an enqueue leases an item it hands to a parked fetch of another process, in milliseconds. */
    public static long offeredLeaseMillis() {
        return OfferedWrites.OFFERED_LEASE_MS;
    }
}
