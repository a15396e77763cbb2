package io.pgdurable.postgres;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Everything a {@link PostgresProvider} needs, validated once in {@link Builder#build()}. Immutable.
 *
 * <p>Connect either by JDBC URL (the provider owns a HikariCP pool of {@code poolSize} connections) or by a
 * {@link DataSource} you own (the provider neither sizes nor closes it).
 */
public final class PostgresProviderConfig {
    public static final String DEFAULT_SCHEMA = "pgdurable";
    public static final int DEFAULT_POOL_SIZE = 10;
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 4 * 1024 * 1024;

    private final String jdbcUrl;
    private final String username;
    private final String password;
    private final DataSource dataSource;
    private final String schema;
    private final int poolSize;
    private final Duration connectionTimeout;
    private final MigrationPolicy migrationPolicy;
    private final Clock clock;
    private final int maxPayloadBytes;
    private final Duration migrationLockTimeout;
    private final Duration migrationLockBudget;
    private final boolean longPolling;
    private final String listenerUrl;
    private final ListenerDriver listenerDriver;
    private final Duration fallbackPollInterval;
    private final Duration wakeCoalescing;
    private final Duration timerScanTimeout;
    private final Duration recoveryScanInterval;
    private final int maxParkedWaiters;
    private final Duration heartbeatInterval;
    private final int maxTrackedDeadlines;
    private final io.pgdurable.longpoll.LongPollSignals longPollSignals;

    /** The driver of the long-poll listener connection. */
    public enum ListenerDriver {
        /** pgjdbc-ng's asynchronous notifications (default; about 0.1 ms from NOTIFY to wake). */
        PGJDBC_NG,
        /** pgjdbc's blocking notification poll (no netty on the class path; about 1 ms per delivery). */
        PGJDBC
    }

    private PostgresProviderConfig(Builder b) {
        this.jdbcUrl = b.jdbcUrl;
        this.username = b.username;
        this.password = b.password;
        this.dataSource = b.dataSource;
        this.schema = b.schema;
        this.poolSize = b.poolSize;
        this.connectionTimeout = b.connectionTimeout;
        this.migrationPolicy = b.migrationPolicy;
        this.clock = b.clock;
        this.maxPayloadBytes = b.maxPayloadBytes;
        this.migrationLockTimeout = b.migrationLockTimeout;
        this.migrationLockBudget = b.migrationLockBudget;
        this.longPolling = b.longPolling;
        this.listenerUrl = b.listenerUrl;
        this.listenerDriver = b.listenerDriver;
        this.fallbackPollInterval = b.fallbackPollInterval;
        this.wakeCoalescing = b.wakeCoalescing;
        this.timerScanTimeout = b.timerScanTimeout;
        this.recoveryScanInterval = b.recoveryScanInterval;
        this.maxParkedWaiters = b.maxParkedWaiters;
        this.heartbeatInterval = b.heartbeatInterval;
        this.maxTrackedDeadlines = b.maxTrackedDeadlines;
        this.longPollSignals = b.longPollSignals;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder pre-filled with this configuration, to derive a variant. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.jdbcUrl = jdbcUrl;
        b.username = username;
        b.password = password;
        b.dataSource = dataSource;
        b.schema = schema;
        b.poolSize = poolSize;
        b.connectionTimeout = connectionTimeout;
        b.migrationPolicy = migrationPolicy;
        b.clock = clock;
        b.maxPayloadBytes = maxPayloadBytes;
        b.migrationLockTimeout = migrationLockTimeout;
        b.migrationLockBudget = migrationLockBudget;
        b.longPolling = longPolling;
        b.listenerUrl = listenerUrl;
        b.listenerDriver = listenerDriver;
        b.fallbackPollInterval = fallbackPollInterval;
        b.wakeCoalescing = wakeCoalescing;
        b.timerScanTimeout = timerScanTimeout;
        b.recoveryScanInterval = recoveryScanInterval;
        b.maxParkedWaiters = maxParkedWaiters;
        b.heartbeatInterval = heartbeatInterval;
        b.maxTrackedDeadlines = maxTrackedDeadlines;
        b.longPollSignals = longPollSignals;
        return b;
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    public String username() {
        return username;
    }

    String password() {
        return password;
    }

    public DataSource dataSource() {
        return dataSource;
    }

    public String schema() {
        return schema;
    }

    public int poolSize() {
        return poolSize;
    }

    public Duration connectionTimeout() {
        return connectionTimeout;
    }

    public MigrationPolicy migrationPolicy() {
        return migrationPolicy;
    }

    public Clock clock() {
        return clock;
    }

    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    public Duration migrationLockTimeout() {
        return migrationLockTimeout;
    }

    public Duration migrationLockBudget() {
        return migrationLockBudget;
    }

    public boolean longPolling() {
        return longPolling;
    }

    /** The URL of the listener's direct connection: {@code listenerUrl} when set, else {@code jdbcUrl}. */
    public String effectiveListenerUrl() {
        return listenerUrl != null ? listenerUrl : jdbcUrl;
    }

    public ListenerDriver listenerDriver() {
        return listenerDriver;
    }

    public Duration fallbackPollInterval() {
        return fallbackPollInterval;
    }

    public Duration wakeCoalescing() {
        return wakeCoalescing;
    }

    public Duration timerScanTimeout() {
        return timerScanTimeout;
    }

    public Duration recoveryScanInterval() {
        return recoveryScanInterval;
    }

    public int maxParkedWaiters() {
        return maxParkedWaiters;
    }

    public Duration heartbeatInterval() {
        return heartbeatInterval;
    }

    public int maxTrackedDeadlines() {
        return maxTrackedDeadlines;
    }

    public io.pgdurable.longpoll.LongPollSignals longPollSignals() {
        return longPollSignals;
    }

    /** Never shows a password, whether given separately or inside the URL. */
    @Override
    public String toString() {
        return "PostgresProviderConfig{" + (jdbcUrl != null ? "url=" + redactUrl(jdbcUrl) : "dataSource=" + dataSource)
                + ", schema=" + schema + ", poolSize=" + poolSize + ", migrationPolicy=" + migrationPolicy
                + ", maxPayloadBytes=" + maxPayloadBytes + ", longPolling=" + longPolling
                + (longPolling ? ", listener=" + listenerDriver + (listenerUrl != null ? " at "
                        + redactUrl(listenerUrl) : "") : "") + "}";
    }

    /** The URL with any password parameter value replaced. */
    public static String redactUrl(String url) {
        return url == null ? null : url.replaceAll("(?i)(password=)[^&;]*", "$1***")
                .replaceAll("(//[^/:@]+:)[^@/]*@", "$1***@");
    }

    public static final class Builder {
        private String jdbcUrl;
        private String username;
        private String password;
        private DataSource dataSource;
        private String schema = DEFAULT_SCHEMA;
        private int poolSize = DEFAULT_POOL_SIZE;
        private Duration connectionTimeout = Duration.ofSeconds(10);
        private MigrationPolicy migrationPolicy = MigrationPolicy.APPLY_ALL;
        private Clock clock = Clock.systemUTC();
        private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        private Duration migrationLockTimeout = Duration.ofMillis(250);
        private Duration migrationLockBudget = Duration.ofSeconds(10);
        private boolean longPolling;
        private String listenerUrl;
        private ListenerDriver listenerDriver = ListenerDriver.PGJDBC_NG;
        private Duration fallbackPollInterval = Duration.ofSeconds(1);
        private Duration wakeCoalescing = Duration.ofMillis(100);
        private Duration timerScanTimeout = Duration.ofMillis(200);
        private Duration recoveryScanInterval = Duration.ofSeconds(60);
        private int maxParkedWaiters = 1024;
        private Duration heartbeatInterval = Duration.ofSeconds(1);
        private int maxTrackedDeadlines = 1024;
        private io.pgdurable.longpoll.LongPollSignals longPollSignals = io.pgdurable.longpoll.LongPollSignals.NONE;

        private Builder() {}

        /** Observer of the long-poll machinery's moments (listening, reconnects, scans, wakes): tests, metrics. */
        public Builder longPollSignals(io.pgdurable.longpoll.LongPollSignals signals) {
            this.longPollSignals = signals;
            return this;
        }

        /**
         * Opt-in LISTEN/NOTIFY long polling: fetches with a poll timeout park until work is claimable. Holds one
         * extra connection (the listener) outside the pool, which must have at least two connections.
         */
        public Builder longPolling(boolean enabled) {
            this.longPolling = enabled;
            return this;
        }

        /**
         * A direct connection URL for the listener, for deployments whose pool goes through a transaction-pooling
         * proxy (which cannot carry LISTEN). Required with long polling when the provider gets a DataSource.
         */
        public Builder listenerUrl(String url) {
            this.listenerUrl = url;
            return this;
        }

        public Builder listenerDriver(ListenerDriver driver) {
            this.listenerDriver = driver;
            return this;
        }

        /** The safety net: while fetches wait, probe for claimable work this often (default 1 s). */
        public Builder fallbackPollInterval(Duration interval) {
            this.fallbackPollInterval = interval;
            return this;
        }

        /** Repeated unsuccessful wakes of one fetch retry at most this often (default 100 ms). */
        public Builder wakeCoalescing(Duration cadence) {
            this.wakeCoalescing = cadence;
            return this;
        }

        /** Server-side lock and statement timeout of timer scans (default 200 ms). */
        public Builder timerScanTimeout(Duration timeout) {
            this.timerScanTimeout = timeout;
            return this;
        }

        /** A full timer scan runs this often even when nothing seems wrong (default 60 s). */
        public Builder recoveryScanInterval(Duration interval) {
            this.recoveryScanInterval = interval;
            return this;
        }

        /** Most fetches that may wait at once; beyond it a fetch fails with CapacityExceededException. */
        public Builder maxParkedWaiters(int max) {
            this.maxParkedWaiters = max;
            return this;
        }

        /** After this much silence the listener connection is validated (default 1 s). */
        public Builder heartbeatInterval(Duration interval) {
            this.heartbeatInterval = interval;
            return this;
        }

        /** Most future wake-up times kept in memory; beyond it a scan finds the rest later (default 1024). */
        public Builder maxTrackedDeadlines(int max) {
            this.maxTrackedDeadlines = max;
            return this;
        }

        /** A {@code jdbc:postgresql:} URL; the provider builds and owns a connection pool for it. */
        public Builder jdbcUrl(String url) {
            this.jdbcUrl = url;
            return this;
        }

        public Builder username(String username) {
            this.username = username;
            return this;
        }

        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /** A data source you own instead of a URL; {@code poolSize} is then yours to set on it. */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** The task hub's schema (letters, digits, '_'; at most 63 bytes). Default {@value #DEFAULT_SCHEMA}. */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        public Builder poolSize(int poolSize) {
            this.poolSize = poolSize;
            return this;
        }

        /** How long an operation waits for a pooled connection before failing (retryable). */
        public Builder connectionTimeout(Duration timeout) {
            this.connectionTimeout = timeout;
            return this;
        }

        public Builder migrationPolicy(MigrationPolicy policy) {
            this.migrationPolicy = policy;
            return this;
        }

        /** The application clock used for every lease and visibility decision. */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /** Largest accepted work item, event, output or key-value value, in UTF-8 bytes. */
        public Builder maxPayloadBytes(int bytes) {
            this.maxPayloadBytes = bytes;
            return this;
        }

        /** How long one attempt waits for another node's migration lock before retrying (default 250 ms). */
        public Builder migrationLockTimeout(Duration timeout) {
            this.migrationLockTimeout = timeout;
            return this;
        }

        /** Total time spent retrying the migration lock before start-up fails (default 10 s). */
        public Builder migrationLockBudget(Duration budget) {
            this.migrationLockBudget = budget;
            return this;
        }

        public PostgresProviderConfig build() {
            if ((jdbcUrl == null) == (dataSource == null)) {
                throw new IllegalArgumentException("configure exactly one of jdbcUrl or dataSource");
            }
            if (jdbcUrl != null && !jdbcUrl.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("jdbcUrl must start with 'jdbc:postgresql:', was '"
                        + redactUrl(jdbcUrl) + "'");
            }
            Identifiers.checkSchemaName(schema);
            if (poolSize < 1 || poolSize > 1000) {
                throw new IllegalArgumentException("poolSize must be in 1..1000, was " + poolSize);
            }
            positive("connectionTimeout", connectionTimeout);
            positive("migrationLockTimeout", migrationLockTimeout);
            positive("migrationLockBudget", migrationLockBudget);
            Objects.requireNonNull(migrationPolicy, "migrationPolicy");
            Objects.requireNonNull(clock, "clock");
            if (longPolling) {
                if (dataSource == null && poolSize < 2) {
                    throw new IllegalArgumentException("long polling needs a pool of at least two connections "
                            + "(poolSize was " + poolSize + "): a parked fetch's retry and the scans share it");
                }
                if (dataSource != null && listenerUrl == null) {
                    throw new IllegalArgumentException("long polling with a DataSource needs listenerUrl: the "
                            + "listener opens its own direct connection");
                }
                if (listenerUrl != null && !listenerUrl.startsWith("jdbc:postgresql:")) {
                    throw new IllegalArgumentException("listenerUrl must start with 'jdbc:postgresql:', was '"
                            + redactUrl(listenerUrl) + "'");
                }
                Objects.requireNonNull(listenerDriver, "listenerDriver");
                Objects.requireNonNull(longPollSignals, "longPollSignals");
                positive("fallbackPollInterval", fallbackPollInterval);
                positive("wakeCoalescing", wakeCoalescing);
                positive("timerScanTimeout", timerScanTimeout);
                positive("recoveryScanInterval", recoveryScanInterval);
                positive("heartbeatInterval", heartbeatInterval);
                if (maxParkedWaiters < 1) {
                    throw new IllegalArgumentException("maxParkedWaiters must be at least 1, was " + maxParkedWaiters);
                }
                if (maxTrackedDeadlines < 16) {
                    throw new IllegalArgumentException("maxTrackedDeadlines must be at least 16, was "
                            + maxTrackedDeadlines);
                }
            }
            if (maxPayloadBytes < 1024) {
                throw new IllegalArgumentException("maxPayloadBytes must be at least 1024, was " + maxPayloadBytes);
            }
            return new PostgresProviderConfig(this);
        }

        private static void positive(String name, Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be a positive duration, was " + d);
            }
        }
    }
}
