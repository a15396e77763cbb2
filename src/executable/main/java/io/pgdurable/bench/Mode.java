package io.pgdurable.bench;

import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import java.time.Duration;
import java.util.Optional;

/**
 * The two ways a runtime's dispatcher asks for work, compared side by side by every scenario.
 *
 * <ul>
 *   <li>{@link #SHORT}: the default provider (no long polling, on a schema never activated: it announces nothing); a
 *       dispatcher fetches with {@code pollTimeout = 0} and, when nothing came back, sleeps
 *       {@link #SHORT_POLL_INTERVAL} (a runtime's minimum poll interval) before asking again.</li>
 *   <li>{@link #LONG}: {@code longPolling(true)} (schema activated, writes announced); a dispatcher fetches with
 *       {@code pollTimeout =} {@link #LONG_POLL_TIMEOUT} and the provider parks it until work is claimable.</li>
 * </ul>
 */
public enum Mode {
    SHORT("short", "short polling (pollTimeout 0, then 50 ms sleep)"),
    LONG("long", "long polling (pollTimeout 30 s, LISTEN/NOTIFY)");

    /** The sleep of a short-polling dispatcher after an empty fetch. */
    public static final Duration SHORT_POLL_INTERVAL = Duration.ofMillis(50);
    /** The poll timeout of a long-polling dispatcher. */
    public static final Duration LONG_POLL_TIMEOUT = Duration.ofSeconds(30);

    private final String key;
    private final String label;

    Mode(String key, String label) {
        this.key = key;
        this.label = label;
    }

    /** The JSON key of this mode's results. */
    public String key() {
        return key;
    }

    public String label() {
        return label;
    }

    PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return builder.longPolling(this == LONG);
    }

    Duration pollTimeout() {
        return this == LONG ? LONG_POLL_TIMEOUT : Duration.ZERO;
    }

    /**
     * One dispatcher poll of the worker queue: long mode parks up to the poll timeout; short mode returns at once
     * and, when empty, sleeps the poll interval first. Interruption ends the sleep and keeps the flag.
     */
    Optional<FetchedWorkItem> pollWork(OrchestrationProvider provider, Duration lockTimeout) {
        Optional<FetchedWorkItem> item = provider.fetchWorkItem(lockTimeout, pollTimeout(), null,
                TagFilter.defaultOnly());
        if (item.isEmpty()) {
            idle();
        }
        return item;
    }

    /** One dispatcher poll of the orchestrator queue (see {@link #pollWork}). */
    Optional<FetchedOrchestration> pollOrchestration(OrchestrationProvider provider, Duration lockTimeout) {
        Optional<FetchedOrchestration> item = provider.fetchOrchestrationItem(lockTimeout, pollTimeout(), null);
        if (item.isEmpty()) {
            idle();
        }
        return item;
    }

    private void idle() {
        if (this == SHORT) {
            Pause.sleep(SHORT_POLL_INTERVAL.toMillis());
        }
    }
}
