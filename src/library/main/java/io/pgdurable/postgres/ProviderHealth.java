package io.pgdurable.postgres;

/**
 * One look at a provider's health ({@link PostgresProvider#health()}), for readiness and liveness probes.
 *
 * @param databaseReachable whether a trivial query through the provider's pool succeeded
 * @param databaseError     why it did not (the classified error's message), or null
 * @param listening         whether the long-poll listener is up and LISTENing; null without long polling
 */
public record ProviderHealth(boolean databaseReachable, String databaseError, Boolean listening) {

    /**
     * The database answers and, with long polling, the listener is up. A provider whose listener is down still
     * serves every call (parked fetches fall back to the one-second probe), but wakes late: not healthy.
     */
    public boolean healthy() {
        return databaseReachable && (listening == null || listening);
    }
}
