package io.pgdurable.postgres;

import java.time.Duration;
import java.util.Objects;
import java.util.Properties;

/**
 * The checks of {@link PostgresProviderConfig.Builder#build()}: every setting in range, the URLs readable by the
 * driver, the combinations that need each other (long polling, a transaction pooler). A bad setting is an
 * {@link IllegalArgumentException} naming it, before anything touches the database (docs/decisions.md,
 * "configuration errors").
 */
final class ConfigChecks {
    private static final int MAX_ENQUEUE_CHUNK_ITEMS = 10_000;
    /** Upper bound of the byte bounds (chunks, batched replies): PostgreSQL values stop at 1 GB. */
    private static final int MAX_BATCH_BYTES = 256 * 1024 * 1024;
    /** Upper bound of {@code enqueueRetryBudget} and {@code ackDrainTimeout}. */
    private static final Duration MAX_BATCH_WAIT = Duration.ofMinutes(10);
    private static final Duration MAX_ACK_FLUSH_IDLE = Duration.ofSeconds(1);
    /** Upper bound of {@code timerLead}: a fetch woken earlier would hold its thread busy for longer. */
    private static final Duration MAX_TIMER_LEAD = Duration.ofMillis(10);

    private ConfigChecks() {}

    static void check(PostgresProviderConfig.Builder b) {
        if ((b.jdbcUrl == null) == (b.dataSource == null)) {
            throw new IllegalArgumentException("configure exactly one of jdbcUrl or dataSource");
        }
        JdbcUrls.check("jdbcUrl", b.jdbcUrl);
        JdbcUrls.check("directUrl", b.directUrl);
        if (b.transactionPooler) {
            checkTransactionPooler(b);
        }
        Identifiers.checkSchemaName(b.schema);
        if (b.poolSize < 1 || b.poolSize > 1000) {
            throw new IllegalArgumentException("poolSize must be in 1..1000, was " + b.poolSize);
        }
        positive("connectionTimeout", b.connectionTimeout);
        positive("migrationLockTimeout", b.migrationLockTimeout);
        positive("migrationLockBudget", b.migrationLockBudget);
        Objects.requireNonNull(b.migrationPolicy, "migrationPolicy");
        Objects.requireNonNull(b.clock, "clock");
        Objects.requireNonNull(b.clockSkewBounds, "clockSkewBounds");
        Objects.requireNonNull(b.metrics, "metrics");
        if (b.longPolling) {
            if (b.dataSource == null && b.poolSize < 2) {
                throw new IllegalArgumentException("long polling needs a pool of at least two connections "
                        + "(poolSize was " + b.poolSize + "): a parked fetch's retry and the scans share it");
            }
            if (b.dataSource != null && b.listenerUrl == null && b.directUrl == null) {
                throw new IllegalArgumentException("long polling with a DataSource needs listenerUrl (or "
                        + "directUrl): the listener opens its own direct connection");
            }
            JdbcUrls.check("listenerUrl", b.listenerUrl);
            Objects.requireNonNull(b.listenerDriver, "listenerDriver");
            Objects.requireNonNull(b.longPollSignals, "longPollSignals");
            positive("fallbackPollInterval", b.fallbackPollInterval);
            positive("wakeCoalescing", b.wakeCoalescing);
            positive("timerScanTimeout", b.timerScanTimeout);
            positive("recoveryScanInterval", b.recoveryScanInterval);
            positive("heartbeatInterval", b.heartbeatInterval);
            if (b.maxParkedWaiters < 1) {
                throw new IllegalArgumentException("maxParkedWaiters must be at least 1, was " + b.maxParkedWaiters);
            }
            bounded("timerLead", b.timerLead, MAX_TIMER_LEAD);
            if (b.maxTrackedDeadlines < 16) {
                throw new IllegalArgumentException("maxTrackedDeadlines must be at least 16, was "
                        + b.maxTrackedDeadlines);
            }
        }
        if (b.maxPayloadBytes < 1024) {
            throw new IllegalArgumentException("maxPayloadBytes must be at least 1024, was " + b.maxPayloadBytes);
        }
        inRange("ackBatchSize", b.ackBatchSize, 1, PostgresProviderConfig.MAX_ACK_BATCH_SIZE);
        bounded("ackFlushIdle", b.ackFlushIdle, MAX_ACK_FLUSH_IDLE);
        bounded("ackDrainTimeout", b.ackDrainTimeout, MAX_BATCH_WAIT);
        inRange("enqueueChunkItems", b.enqueueChunkItems, 1, MAX_ENQUEUE_CHUNK_ITEMS);
        inRange("enqueueChunkBytes", b.enqueueChunkBytes, 1024, MAX_BATCH_BYTES);
        bounded("enqueueRetryBudget", b.enqueueRetryBudget, MAX_BATCH_WAIT);
        inRange("fetchBatchMaxBytes", b.fetchBatchMaxBytes, 1024, MAX_BATCH_BYTES);
    }

    /**
     * What a transaction pooler needs: a direct URL for the session users, distinct from the pool's URL, and a
     * pool URL that does not ask for server-side prepared statements itself (the URL's parameters would win over
     * the provider's {@code prepareThreshold=0}).
     */
    private static void checkTransactionPooler(PostgresProviderConfig.Builder b) {
        if (b.directUrl == null) {
            throw new IllegalArgumentException("transactionPooler needs directUrl, a URL that reaches PostgreSQL "
                    + "without the pooler: migrations and schema checks hold a session advisory lock"
                    + (b.longPolling ? ", and the long-poll listener's LISTEN (listenerUrl, else directUrl) needs "
                    + "a session of its own" : "") + "; see docs/pgbouncer.md");
        }
        if (b.jdbcUrl != null && (b.jdbcUrl.equals(b.directUrl) || b.jdbcUrl.equals(b.listenerUrl))) {
            throw new IllegalArgumentException((b.jdbcUrl.equals(b.directUrl) ? "directUrl" : "listenerUrl")
                    + " is the same URL as jdbcUrl, which goes through the transaction pooler; point it at "
                    + "PostgreSQL itself (or at a session-mode pooler)");
        }
        if (b.jdbcUrl != null) {
            Properties parsed = org.postgresql.Driver.parseURL(b.jdbcUrl, null);
            String threshold = parsed == null ? null : parsed.getProperty("prepareThreshold");
            if (threshold != null && !threshold.trim().equals("0")) {
                throw new IllegalArgumentException("jdbcUrl sets prepareThreshold=" + threshold + ", but with "
                        + "transactionPooler the pool must not prepare statements on the server: remove the "
                        + "parameter or set it to 0");
            }
        }
    }

    private static void inRange(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in " + min + ".." + max + ", was " + value);
        }
    }

    /** Zero or positive and at most {@code max}. */
    private static void bounded(String name, Duration d, Duration max) {
        if (d == null || d.isNegative()) {
            throw new IllegalArgumentException(name + " must be zero or a positive duration, was " + d);
        }
        if (d.compareTo(max) > 0) {
            throw new IllegalArgumentException(name + " must be at most " + max + ", was " + d);
        }
    }

    private static void positive(String name, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be a positive duration, was " + d);
        }
    }
}
