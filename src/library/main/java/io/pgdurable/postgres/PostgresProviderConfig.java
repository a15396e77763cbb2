package io.pgdurable.postgres;

import java.time.Clock;
import java.time.Duration;
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
    /** Most acks one batched flush may hold ({@code ackBatchSize}). */
    public static final int MAX_ACK_BATCH_SIZE = 1000;
    public static final int DEFAULT_ENQUEUE_CHUNK_ITEMS = 500;
    public static final int DEFAULT_ENQUEUE_CHUNK_BYTES = 4 * 1024 * 1024;
    public static final int DEFAULT_FETCH_BATCH_MAX_BYTES = 16 * 1024 * 1024;
    /**
     * 5 ms: an orchestrator fetch woken this early claims at once what will be visible by the time, so a timer's
     * lateness is not the claim's round trip (docs/long-polling.md, "Timers claimed ahead").
     */
    public static final Duration DEFAULT_TIMER_LEAD = Duration.ofMillis(5);

    /** A private copy of the builder this configuration was built from, never changed after {@code build()}. */
    private final Builder settings;

    /** The driver of the long-poll listener connection. */
    public enum ListenerDriver {
        /** pgjdbc-ng's asynchronous notifications (default; about 0.1 ms from NOTIFY to wake). */
        PGJDBC_NG,
        /** pgjdbc's blocking notification poll (no netty on the class path; about 1 ms per delivery). */
        PGJDBC
    }

    private PostgresProviderConfig(Builder b) {
        this.settings = b.copy();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder pre-filled with this configuration, to derive a variant. */
    public Builder toBuilder() {
        return settings.copy();
    }

    public String jdbcUrl() {
        return settings.jdbcUrl;
    }

    public String username() {
        return settings.username;
    }

    String password() {
        return settings.password;
    }

    public DataSource dataSource() {
        return settings.dataSource;
    }

    public String schema() {
        return settings.schema;
    }

    public int poolSize() {
        return settings.poolSize;
    }

    public Duration connectionTimeout() {
        return settings.connectionTimeout;
    }

    public MigrationPolicy migrationPolicy() {
        return settings.migrationPolicy;
    }

    public Clock clock() {
        return settings.clock;
    }

    public int maxPayloadBytes() {
        return settings.maxPayloadBytes;
    }

    /** Whether the provider measures its clock against the server's (see the builder). */
    public boolean clockSkewCheck() {
        return settings.clockSkewCheck;
    }

    /** How far the clock may be from the server's, and how often it is measured (see the builder). */
    public ClockSkewBounds clockSkewBounds() {
        return settings.clockSkewBounds;
    }

    public Duration migrationLockTimeout() {
        return settings.migrationLockTimeout;
    }

    public Duration migrationLockBudget() {
        return settings.migrationLockBudget;
    }

    public boolean longPolling() {
        return settings.longPolling;
    }

    /** Whether worker items are handed over between processes through the database (see the builder). */
    public boolean handOverAcrossProcesses() {
        return settings.handOverAcrossProcesses;
    }

    /**
     * The URL of the listener's direct connection: {@code listenerUrl} when set, else {@code directUrl}, else
     * {@code jdbcUrl}.
     */
    public String effectiveListenerUrl() {
        Builder b = settings;
        return b.listenerUrl != null ? b.listenerUrl : b.directUrl != null ? b.directUrl : b.jdbcUrl;
    }

    /** Whether the pool's connections go through a transaction-pooling proxy (see the builder). */
    public boolean transactionPooler() {
        return settings.transactionPooler;
    }

    /** The URL of the connections that need a server session of their own (migrations, the listener), or null. */
    public String directUrl() {
        return settings.directUrl;
    }

    public ListenerDriver listenerDriver() {
        return settings.listenerDriver;
    }

    public Duration fallbackPollInterval() {
        return settings.fallbackPollInterval;
    }

    public Duration wakeCoalescing() {
        return settings.wakeCoalescing;
    }

    public Duration timerScanTimeout() {
        return settings.timerScanTimeout;
    }

    public Duration recoveryScanInterval() {
        return settings.recoveryScanInterval;
    }

    public int maxParkedWaiters() {
        return settings.maxParkedWaiters;
    }

    public Duration heartbeatInterval() {
        return settings.heartbeatInterval;
    }

    public int maxTrackedDeadlines() {
        return settings.maxTrackedDeadlines;
    }

    public Duration timerLead() {
        return settings.timerLead;
    }

    public io.pgdurable.longpoll.LongPollSignals longPollSignals() {
        return settings.longPollSignals;
    }

    /** Where the provider reports its metrics ({@link ProviderMetrics#NONE} by default). */
    public ProviderMetrics metrics() {
        return settings.metrics;
    }

    /** Terminal acks per batched flush; 1 (the default) acks each item in its own call, as without batching. */
    public int ackBatchSize() {
        return settings.ackBatchSize;
    }

    /** With batched acks: flush once no new ack arrived for this long (0 = as soon as the flusher is free). */
    public Duration ackFlushIdle() {
        return settings.ackFlushIdle;
    }

    /** With batched acks: how long {@code close()} keeps flushing buffered acks (0 = not at all). */
    public Duration ackDrainTimeout() {
        return settings.ackDrainTimeout;
    }

    /** Most items per statement of a batched enqueue. */
    public int enqueueChunkItems() {
        return settings.enqueueChunkItems;
    }

    /** Most bytes (the items' JSON, UTF-8) per statement of a batched enqueue; an item larger goes alone. */
    public int enqueueChunkBytes() {
        return settings.enqueueChunkBytes;
    }

    /** How long a batched enqueue may keep retrying a chunk that failed retryably (0 = fail fast). */
    public Duration enqueueRetryBudget() {
        return settings.enqueueRetryBudget;
    }

    /** Most bytes (the items' JSON) one batched fetch returns; its first item is returned even when larger. */
    public int fetchBatchMaxBytes() {
        return settings.fetchBatchMaxBytes;
    }

    /** Never shows a password, whether given separately or inside the URL. */
    @Override
    public String toString() {
        Builder b = settings;
        return "PostgresProviderConfig{" + (b.jdbcUrl != null ? "url=" + JdbcUrls.redact(b.jdbcUrl)
                : "dataSource=" + b.dataSource)
                + ", schema=" + b.schema + ", poolSize=" + b.poolSize + ", migrationPolicy=" + b.migrationPolicy
                + ", maxPayloadBytes=" + b.maxPayloadBytes
                + (b.clockSkewCheck ? "" : ", clockSkewCheck=false")
                + (b.ackBatchSize > 1 ? ", ackBatchSize=" + b.ackBatchSize : "") + ", longPolling=" + b.longPolling
                + (b.handOverAcrossProcesses ? "" : ", handOverAcrossProcesses=false")
                + (b.transactionPooler ? ", transactionPooler=true" : "")
                + (b.longPolling && !b.timerLead.equals(DEFAULT_TIMER_LEAD) ? ", timerLead=" + b.timerLead : "")
                + (b.directUrl != null ? ", directUrl=" + JdbcUrls.redact(b.directUrl) : "")
                + (b.longPolling ? ", listener=" + b.listenerDriver + (b.listenerUrl != null ? " at "
                        + JdbcUrls.redact(b.listenerUrl) : "") : "") + "}";
    }

    public static final class Builder implements Cloneable {
        String jdbcUrl;
        String username;
        String password;
        DataSource dataSource;
        String schema = DEFAULT_SCHEMA;
        int poolSize = DEFAULT_POOL_SIZE;
        Duration connectionTimeout = Duration.ofSeconds(10);
        MigrationPolicy migrationPolicy = MigrationPolicy.APPLY_ALL;
        Clock clock = Clock.systemUTC();
        boolean clockSkewCheck = true;
        ClockSkewBounds clockSkewBounds = ClockSkewBounds.DEFAULT;
        int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        Duration migrationLockTimeout = Duration.ofMillis(250);
        Duration migrationLockBudget = Duration.ofSeconds(10);
        boolean longPolling;
        boolean handOverAcrossProcesses = true;
        String listenerUrl;
        boolean transactionPooler;
        String directUrl;
        ListenerDriver listenerDriver = ListenerDriver.PGJDBC_NG;
        Duration fallbackPollInterval = Duration.ofSeconds(1);
        Duration wakeCoalescing = Duration.ofMillis(100);
        Duration timerScanTimeout = Duration.ofMillis(200);
        Duration recoveryScanInterval = Duration.ofSeconds(60);
        int maxParkedWaiters = 1024;
        Duration heartbeatInterval = Duration.ofSeconds(1);
        int maxTrackedDeadlines = 1024;
        Duration timerLead = DEFAULT_TIMER_LEAD;
        io.pgdurable.longpoll.LongPollSignals longPollSignals = io.pgdurable.longpoll.LongPollSignals.NONE;
        ProviderMetrics metrics = ProviderMetrics.NONE;
        int ackBatchSize = 1;
        Duration ackFlushIdle = Duration.ofMillis(2);
        Duration ackDrainTimeout = Duration.ofSeconds(2);
        int enqueueChunkItems = DEFAULT_ENQUEUE_CHUNK_ITEMS;
        int enqueueChunkBytes = DEFAULT_ENQUEUE_CHUNK_BYTES;
        Duration enqueueRetryBudget = Duration.ZERO;
        int fetchBatchMaxBytes = DEFAULT_FETCH_BATCH_MAX_BYTES;

        private Builder() {}

        /** Every setting is an immutable value or a shared reference (a clock, a data source), so a shallow copy. */
        Builder copy() {
            try {
                return (Builder) clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
        }

        /**
         * Opt-in batched terminal acks (1..{@value #MAX_ACK_BATCH_SIZE}). With 1, the default, every
         * {@code ackWorkItem} is its own call, exactly as without batching. Above 1, acks go to one background
         * flusher that commits up to this many at once (one {@code DELETE ... RETURNING}); each {@code ackWorkItem}
         * still blocks until its own item is flushed and reports its own outcome. See docs/batching.md.
         */
        public Builder ackBatchSize(int size) {
            this.ackBatchSize = size;
            return this;
        }

        /**
         * With batched acks, the group-commit window: a flush starts when the buffer is full or when no new ack
         * arrived for this long (default 2 ms; zero = flush whatever is buffered as soon as the flusher is free;
         * at most 1 s).
         */
        public Builder ackFlushIdle(Duration idle) {
            this.ackFlushIdle = idle;
            return this;
        }

        /**
         * With batched acks, how long {@code close()} keeps flushing what is buffered (default 2 s, at most 10 min).
         * Zero means close flushes nothing more: buffered acks fail (retryable) and their items are redelivered
         * after their leases expire.
         */
        public Builder ackDrainTimeout(Duration timeout) {
            this.ackDrainTimeout = timeout;
            return this;
        }

        /** Most items per statement of a batched enqueue (default 500, 1..10,000). */
        public Builder enqueueChunkItems(int items) {
            this.enqueueChunkItems = items;
            return this;
        }

        /**
         * Most bytes (the items' JSON in UTF-8) per statement of a batched enqueue (default 4 MiB, 1 KiB..256 MiB).
         * A single item larger than this goes in a chunk of its own.
         */
        public Builder enqueueChunkBytes(int bytes) {
            this.enqueueChunkBytes = bytes;
            return this;
        }

        /**
         * How long a batched enqueue may wait and retry a chunk that failed retryably (pool exhausted, statement
         * timeout, database unavailable), counted from the start of the batch. Zero, the default, fails fast; at
         * most 10 min. The first retry of a batch is logged once.
         */
        public Builder enqueueRetryBudget(Duration budget) {
            this.enqueueRetryBudget = budget;
            return this;
        }

        /**
         * Most bytes (the items' JSON) one batched fetch returns (default 16 MiB, 1 KiB..256 MiB); its first item is
         * returned even when it alone is larger, so no item is too big to fetch.
         */
        public Builder fetchBatchMaxBytes(int bytes) {
            this.fetchBatchMaxBytes = bytes;
            return this;
        }

        /** Observer of the long-poll machinery's moments (listening, reconnects, scans, wakes): tests, metrics. */
        public Builder longPollSignals(io.pgdurable.longpoll.LongPollSignals signals) {
            this.longPollSignals = signals;
            return this;
        }

        /**
         * Metrics and gauges for operators, e.g. {@code new io.pgdurable.metrics.PgDurableMetrics(meterRegistry)}
         * (Micrometer, an optional dependency; docs/operations.md lists the meters). Default: none, at no cost.
         */
        public Builder metrics(ProviderMetrics metrics) {
            this.metrics = metrics;
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
         * Whether worker items are handed over between processes (default true; both sides need it; see
         * docs/long-polling.md, "Settings that choose an algorithm" and "Hand-over across processes"). A
         * long-polling provider keeps a row saying how many of its {@code fetchWorkItem} calls are parked for
         * untagged items without a session (written when that number rose, or fell for a second), and
         * its listener's session holds an advisory lock that tells others it still hears them. A provider's
         * {@code enqueueForWorker} of such an item, when none of its own parked fetches takes it, leases it in the
         * enqueue's transaction to a parked fetch of another such process and sends it in the NOTIFY (items under
         * 8000 bytes with the header): that fetch returns it without a claim. The enqueue leases it for a few
         * seconds only and the taking process extends the lease to its fetch's lock time right after, so an item
         * handed to a process in the instant its listener dies is claimable again after those seconds. A fetch that
         * stopped waiting meanwhile gives the item back at once (attempt not counted). Costs: one statement per change
         * of the parked count and one per batch of items taken, one lookup in a small table per offered enqueue. With
         * long polling off, only the enqueue side applies.
         */
        public Builder handOverAcrossProcesses(boolean enabled) {
            this.handOverAcrossProcesses = enabled;
            return this;
        }

        /**
         * A direct connection URL for the listener only (default: {@code directUrl}, else {@code jdbcUrl}). LISTEN
         * needs a server session of its own, which a transaction-pooling proxy does not keep. With long polling and a
         * DataSource, this or {@code directUrl} is required.
         */
        public Builder listenerUrl(String url) {
            this.listenerUrl = url;
            return this;
        }

        /**
         * Whether the pool's connections go through a transaction-pooling proxy (PgBouncer with
         * {@code pool_mode = transaction}, or any pooler that may run a connection's consecutive transactions on
         * different server sessions; default false). On, the owned pool prepares no statement on the server
         * (pgjdbc {@code prepareThreshold=0}: a named statement would outlive its transaction and collide with, or be
         * missing on, the next server session), and everything that needs a session of its own — migrations and
         * schema checks (a session advisory lock, Flyway's {@code search_path}) and the long-poll listener
         * ({@code LISTEN}) — connects through {@code directUrl}, which is then required. A {@code DataSource} you
         * own cannot be changed: it must already have {@code prepareThreshold=0}, and the provider refuses to start
         * when its connections say otherwise. Nothing is detected automatically; see docs/pgbouncer.md.
         */
        public Builder transactionPooler(boolean enabled) {
            this.transactionPooler = enabled;
            return this;
        }

        /**
         * A URL that reaches PostgreSQL without the transaction pooler (or through a session-mode pooler), for the
         * connections that need a server session of their own: migrations, schema checks and activation at start,
         * and the long-poll listener unless {@code listenerUrl} is set. Required with {@code transactionPooler};
         * when set without it, those connections use it too. Credentials set with {@code username}/{@code password}
         * apply unless the URL carries its own.
         */
        public Builder directUrl(String url) {
            this.directUrl = url;
            return this;
        }

        /**
         * The long-poll listener connection's driver (default {@link ListenerDriver#PGJDBC_NG}, asynchronous). Choose
         * {@link ListenerDriver#PGJDBC} where netty must not be shipped: each notification then reaches the listener
         * about 1 ms later (docs/long-polling.md, "Settings that choose an algorithm").
         */
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

        /**
         * How long before a delayed item's visibility time its deadline wakes a parked fetch (default 5 ms; at most
         * 10 ms). A worker fetch waits out the rest itself, busy-waiting within a small budget, and claims at that
         * time; an orchestrator fetch claims at once what will be visible by that time (leases still judged by its own
         * clock) and returns it no earlier than that time. A lease end's read-only verification starts the same lead
         * early and the fetches it wakes wait for the lease end before they claim. Zero wakes the fetch at the time
         * itself, as the design describes; see docs/long-polling.md, "Timer lead", "Timers claimed ahead" and "Lease
         * ends verified ahead".
         */
        public Builder timerLead(Duration lead) {
            this.timerLead = lead;
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

        /**
         * The application clock used for every lease and visibility decision. It is measured against the database
         * server's clock (see {@link ClockSkewBounds}); every node's clock must agree with the server's.
         */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /**
         * Whether the provider compares its clock with the server's {@code clock_timestamp()} at start and every
         * {@code checkInterval} of its {@link ClockSkewBounds} (default true). Turn it off only for a clock that
         * differs from the server's on purpose (a test's simulated time): the bounds then protect nothing.
         */
        public Builder clockSkewCheck(boolean enabled) {
            this.clockSkewCheck = enabled;
            return this;
        }

        /** How far the clock may be from the server's, and how often it is measured ({@link ClockSkewBounds#DEFAULT}). */
        public Builder clockSkewBounds(ClockSkewBounds bounds) {
            this.clockSkewBounds = bounds;
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

        /**
         * Checks every setting and returns the configuration; a setting out of range or a combination that cannot
         * work is an {@link IllegalArgumentException} naming it.
         */
        public PostgresProviderConfig build() {
            ConfigChecks.check(this);
            return new PostgresProviderConfig(this);
        }
    }
}
