package io.pgdurable.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.pgdurable.postgres.ProviderMetrics;
import java.time.Duration;
import java.util.Objects;

/**
 * The provider's metrics in a Micrometer {@link MeterRegistry}: one line in the provider's configuration,
 * <pre>{@code PostgresProviderConfig.builder()...metrics(new PgDurableMetrics(meterRegistry))}</pre>
 * and every provider built from it reports meters named {@code pgdurable.*}, tagged with its schema, plus its own
 * HikariCP pool's {@code hikaricp.*} meters when the provider owns the pool (docs/operations.md lists them all).
 * A provider removes its meters when it closes.
 *
 * <p>Immutable; one instance may serve several providers. Two providers on the same schema reporting to one
 * registry need a tag that tells them apart ({@link #withTags}); without one the second is refused at start.
 *
 * <p>Micrometer is an optional dependency of pgdurable: add {@code io.micrometer:micrometer-core} (and your
 * registry) to use this class. Without it the provider runs as before, measuring nothing.
 */
public final class PgDurableMetrics implements ProviderMetrics {
    /** How long a read of the queue depths is reused by the depth gauges before the next read. */
    public static final Duration DEFAULT_DEPTH_REFRESH = Duration.ofSeconds(5);

    private final MeterRegistry registry;
    private final Tags tags;
    private final Duration depthRefresh;
    private final boolean poolMetrics;

    /** Every meter, with the schema tag only; queue depths read at most every {@link #DEFAULT_DEPTH_REFRESH}. */
    public PgDurableMetrics(MeterRegistry registry) {
        this(Objects.requireNonNull(registry, "registry"), Tags.empty(), DEFAULT_DEPTH_REFRESH, true);
    }

    private PgDurableMetrics(MeterRegistry registry, Tags tags, Duration depthRefresh, boolean poolMetrics) {
        this.registry = registry;
        this.tags = tags;
        this.depthRefresh = depthRefresh;
        this.poolMetrics = poolMetrics;
    }

    /** The same with {@code extra} tags on every {@code pgdurable.*} meter (an instance name, a region). */
    public PgDurableMetrics withTags(Iterable<Tag> extra) {
        Tags more = Tags.of(Objects.requireNonNull(extra, "extra"));
        for (Tag t : more) {
            if (t.getKey().equals(ProviderMeters.SCHEMA_TAG)) {
                throw new IllegalArgumentException("the tag '" + ProviderMeters.SCHEMA_TAG + "' is set by the "
                        + "provider itself; choose another key");
            }
        }
        return new PgDurableMetrics(registry, tags.and(more), depthRefresh, poolMetrics);
    }

    /**
     * The same with the queue depth gauges reading the database at most once per {@code refresh} (at least 100 ms;
     * default {@link #DEFAULT_DEPTH_REFRESH}): a scrape in between gets the previous read, so scrapers never add
     * load of their own.
     */
    public PgDurableMetrics withQueueDepthRefresh(Duration refresh) {
        if (refresh == null || refresh.compareTo(Duration.ofMillis(100)) < 0) {
            throw new IllegalArgumentException("the queue depth refresh must be at least 100 ms, was " + refresh);
        }
        return new PgDurableMetrics(registry, tags, refresh, poolMetrics);
    }

    /** The same without the owned HikariCP pool's meters (when the application binds them itself). */
    public PgDurableMetrics withoutPoolMetrics() {
        return new PgDurableMetrics(registry, tags, depthRefresh, false);
    }

    @Override
    public Observer open(String schema) {
        return new ProviderMeters(registry, tags.and(ProviderMeters.SCHEMA_TAG, schema), depthRefresh, poolMetrics);
    }
}
