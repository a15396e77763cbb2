package io.pgdurable.bench;

import io.pgdurable.longpoll.LongPollView;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;

/**
 * One provider on one task-hub schema, configured for one {@link Mode}, with a {@link RecordingClock} and long-poll
 * signal counters. Closing it closes the provider (parked fetches return empty); the schema stays until the
 * benchmark drops it.
 */
final class Hub implements AutoCloseable {
    private final Mode mode;
    private final String schema;
    private final PostgresProvider provider;
    private final RecordingClock clock;
    private final CountingSignals signals;

    private Hub(Mode mode, String schema, PostgresProvider provider, RecordingClock clock, CountingSignals signals) {
        this.mode = mode;
        this.schema = schema;
        this.provider = provider;
        this.clock = clock;
        this.signals = signals;
    }

    static Hub open(String url, String schema, Mode mode, int poolSize) {
        return open(url, schema, mode, poolSize, b -> b);
    }

    /** As {@link #open(String, String, Mode, int)}, with extra configuration ({@code tune}) applied last. */
    static Hub open(String url, String schema, Mode mode, int poolSize,
                    java.util.function.UnaryOperator<PostgresProviderConfig.Builder> tune) {
        RecordingClock clock = new RecordingClock();
        CountingSignals signals = new CountingSignals();
        PostgresProviderConfig.Builder b = PostgresProviderConfig.builder()
                .jdbcUrl(url)
                .schema(schema)
                .poolSize(Math.max(2, poolSize))
                .clock(clock)
                .maxParkedWaiters(4096)
                // On as in the library; off for every scenario only for A/B runs of its cost.
                .handOverAcrossProcesses(!Boolean.getBoolean("pgdurable.bench.noHandOverAcross"))
                .longPollSignals(signals);
        Long leadMicros = Long.getLong("pgdurable.bench.timerLeadMicros");
        if (leadMicros != null) {
            b.timerLead(java.time.Duration.ofNanos(leadMicros * 1000));
        }
        PostgresProvider provider = PostgresProvider.create(tune.apply(mode.configure(b)).build());
        Hub hub = new Hub(mode, schema, provider, clock, signals);
        if (mode == Mode.LONG && !Pause.until(hub::listening, 15_000)) {
            hub.close();
            throw new IllegalStateException("the long-polling provider of schema " + schema
                    + " is not listening after 15 s");
        }
        return hub;
    }

    Mode mode() {
        return mode;
    }

    String schema() {
        return schema;
    }

    PostgresProvider provider() {
        return provider;
    }

    RecordingClock clock() {
        return clock;
    }

    CountingSignals signals() {
        return signals;
    }

    boolean listening() {
        return provider.longPolling().map(LongPollView::isListening).orElse(false);
    }

    /** Fetches registered with long polling right now (0 in short mode). */
    int waiting() {
        return provider.longPolling().map(LongPollView::parkedFetches).orElse(0);
    }

    /** Wakes handed out by long polling since the provider started (0 in short mode). */
    long wakesIssued() {
        return provider.longPolling().map(LongPollView::wakesIssued).orElse(0L);
    }

    /** Waits until {@code n} fetches are parked (long mode); in short mode it waits one poll interval. */
    boolean awaitParked(int n, long timeoutMillis) {
        if (mode == Mode.SHORT) {
            return Pause.sleep(Mode.SHORT_POLL_INTERVAL.toMillis());
        }
        return Pause.until(() -> waiting() >= n, timeoutMillis);
    }

    @Override
    public void close() {
        provider.close();
    }
}
