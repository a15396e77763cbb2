package io.pgdurable.postgres;

import java.time.Duration;

/**
 * How far a provider's clock may be from the database server's {@code clock_timestamp()}, and how often it is
 * measured after the start. Every lease and visibility decision uses the provider's clock: a clock ahead takes other
 * nodes' leases early and returns delayed items early by its offset, one behind gives its own leases and delays to
 * others early (docs/operations.md, "Clock skew between nodes and the server").
 *
 * @param warning past this offset the provider logs a warning, at most once every ten minutes while it lasts
 * @param limit past this offset the provider takes no lease: fetches of both queues fail with a retryable error
 *     naming the offset until a later check finds the clock back within it, and a provider whose first measurement
 *     is already past it does not start. Keep it well below the shortest lock timeout you fetch with
 * @param checkInterval how often the clock is measured again after the start, one statement on a pooled connection
 *     each time; while leases are refused, at least every 5 s
 */
public record ClockSkewBounds(Duration warning, Duration limit, Duration checkInterval) {
    /** Lower bound of {@code checkInterval}; initialised before {@link #DEFAULT}, which is checked against it. */
    public static final Duration MIN_CHECK_INTERVAL = Duration.ofMillis(10);
    /**
     * Warning 500 ms, a tenth of the shortest lease the runtime takes by default (the 5 s orchestrator lock); limit
     * 1 s, a fifth of it: that lock's holder renews at half its length, so a clock ahead by the limit takes the lease
     * 1.5 s after the renewal was due; a check every 60 s, one statement a minute.
     */
    public static final ClockSkewBounds DEFAULT =
            new ClockSkewBounds(Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(60));

    /** @throws IllegalArgumentException naming the bound that is missing, not positive or out of order */
    public ClockSkewBounds {
        positive("warning", warning);
        positive("limit", limit);
        if (limit.compareTo(warning) <= 0) {
            throw new IllegalArgumentException("clockSkewBounds: limit must be above warning, was " + limit
                    + " with warning " + warning);
        }
        positive("checkInterval", checkInterval);
        if (checkInterval.compareTo(MIN_CHECK_INTERVAL) < 0) {
            throw new IllegalArgumentException("clockSkewBounds: checkInterval must be at least " + MIN_CHECK_INTERVAL
                    + ", was " + checkInterval);
        }
    }

    /** These bounds, measured every {@code interval}. */
    public ClockSkewBounds withCheckInterval(Duration interval) {
        return new ClockSkewBounds(warning, limit, interval);
    }

    private static void positive(String name, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException("clockSkewBounds: " + name + " must be a positive duration, was "
                    + value);
        }
    }
}
