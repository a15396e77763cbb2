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
    /** Most acks one batched flush may hold ({@code ackBatchSize}). */
    public static final int MAX_ACK_BATCH_SIZE = 1000;
    public static final int DEFAULT_ENQUEUE_CHUNK_ITEMS = 500;
    public static final int MAX_ENQUEUE_CHUNK_ITEMS = 10_000;
    public static final int DEFAULT_ENQUEUE_CHUNK_BYTES = 4 * 1024 * 1024;
    public static final int DEFAULT_FETCH_BATCH_MAX_BYTES = 16 * 1024 * 1024;
    /** Upper bound of the byte bounds (chunks, batched replies): PostgreSQL values stop at 1 GB. */
    public static final int MAX_BATCH_BYTES = 256 * 1024 * 1024;
    /** Upper bound of {@code enqueueRetryBudget} and {@code ackDrainTimeout}. */
    public static final Duration MAX_BATCH_WAIT = Duration.ofMinutes(10);
    /** Upper bound of {@code ackFlushIdle}. */
    public static final Duration MAX_ACK_FLUSH_IDLE = Duration.ofSeconds(1);
    /** 5 ms since migration V21 (orchestrator claims ahead of a visibility time), 1 ms before: docs/benchmarks.md. */
    public static final Duration DEFAULT_TIMER_LEAD = Duration.ofMillis(5);
    /** Upper bound of {@code timerLead}: a fetch woken earlier would hold its thread busy for longer. */
    public static final Duration MAX_TIMER_LEAD = Duration.ofMillis(10);

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
    private final boolean transactionalNotify;
    private final boolean inlineNotifyWhenIdle;
    private final boolean asyncClaimCommit;
    private final boolean handOverToParkedFetches;
    private final boolean handOverAcrossProcesses;
    private final String listenerUrl;
    private final boolean transactionPooler;
    private final String directUrl;
    private final ListenerDriver listenerDriver;
    private final Duration fallbackPollInterval;
    private final Duration wakeCoalescing;
    private final Duration timerScanTimeout;
    private final Duration recoveryScanInterval;
    private final int maxParkedWaiters;
    private final Duration heartbeatInterval;
    private final int maxTrackedDeadlines;
    private final Duration timerLead;
    private final io.pgdurable.longpoll.LongPollSignals longPollSignals;
    private final ProviderMetrics metrics;
    private final int ackBatchSize;
    private final Duration ackFlushIdle;
    private final Duration ackDrainTimeout;
    private final int enqueueChunkItems;
    private final int enqueueChunkBytes;
    private final Duration enqueueRetryBudget;
    private final int fetchBatchMaxBytes;

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
        this.transactionalNotify = b.transactionalNotify;
        this.inlineNotifyWhenIdle = b.inlineNotifyWhenIdle;
        this.asyncClaimCommit = b.asyncClaimCommit;
        this.handOverToParkedFetches = b.handOverToParkedFetches;
        this.handOverAcrossProcesses = b.handOverAcrossProcesses;
        this.listenerUrl = b.listenerUrl;
        this.transactionPooler = b.transactionPooler;
        this.directUrl = b.directUrl;
        this.listenerDriver = b.listenerDriver;
        this.fallbackPollInterval = b.fallbackPollInterval;
        this.wakeCoalescing = b.wakeCoalescing;
        this.timerScanTimeout = b.timerScanTimeout;
        this.recoveryScanInterval = b.recoveryScanInterval;
        this.maxParkedWaiters = b.maxParkedWaiters;
        this.heartbeatInterval = b.heartbeatInterval;
        this.maxTrackedDeadlines = b.maxTrackedDeadlines;
        this.timerLead = b.timerLead;
        this.longPollSignals = b.longPollSignals;
        this.metrics = b.metrics;
        this.ackBatchSize = b.ackBatchSize;
        this.ackFlushIdle = b.ackFlushIdle;
        this.ackDrainTimeout = b.ackDrainTimeout;
        this.enqueueChunkItems = b.enqueueChunkItems;
        this.enqueueChunkBytes = b.enqueueChunkBytes;
        this.enqueueRetryBudget = b.enqueueRetryBudget;
        this.fetchBatchMaxBytes = b.fetchBatchMaxBytes;
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
        b.transactionalNotify = transactionalNotify;
        b.inlineNotifyWhenIdle = inlineNotifyWhenIdle;
        b.asyncClaimCommit = asyncClaimCommit;
        b.handOverToParkedFetches = handOverToParkedFetches;
        b.handOverAcrossProcesses = handOverAcrossProcesses;
        b.listenerUrl = listenerUrl;
        b.transactionPooler = transactionPooler;
        b.directUrl = directUrl;
        b.listenerDriver = listenerDriver;
        b.fallbackPollInterval = fallbackPollInterval;
        b.wakeCoalescing = wakeCoalescing;
        b.timerScanTimeout = timerScanTimeout;
        b.recoveryScanInterval = recoveryScanInterval;
        b.maxParkedWaiters = maxParkedWaiters;
        b.heartbeatInterval = heartbeatInterval;
        b.maxTrackedDeadlines = maxTrackedDeadlines;
        b.timerLead = timerLead;
        b.longPollSignals = longPollSignals;
        b.metrics = metrics;
        b.ackBatchSize = ackBatchSize;
        b.ackFlushIdle = ackFlushIdle;
        b.ackDrainTimeout = ackDrainTimeout;
        b.enqueueChunkItems = enqueueChunkItems;
        b.enqueueChunkBytes = enqueueChunkBytes;
        b.enqueueRetryBudget = enqueueRetryBudget;
        b.fetchBatchMaxBytes = fetchBatchMaxBytes;
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

    /** Whether this provider's writes notify from inside their own transactions (the schema's triggers). */
    public boolean transactionalNotify() {
        return transactionalNotify;
    }

    /** Whether an idle announcer's due hints may travel inside the writing transaction (see the builder). */
    public boolean inlineNotifyWhenIdle() {
        return inlineNotifyWhenIdle;
    }

    /** Whether claims commit without waiting for their WAL flush (see the builder). */
    public boolean asyncClaimCommit() {
        return asyncClaimCommit;
    }

    /** Whether this provider's worker writes lease their items to its own parked fetches (see the builder). */
    public boolean handOverToParkedFetches() {
        return handOverToParkedFetches;
    }

    /** Whether worker items are handed over between processes through the database (see the builder). */
    public boolean handOverAcrossProcesses() {
        return handOverAcrossProcesses;
    }

    /**
     * The URL of the listener's direct connection: {@code listenerUrl} when set, else {@code directUrl}, else
     * {@code jdbcUrl}.
     */
    public String effectiveListenerUrl() {
        return listenerUrl != null ? listenerUrl : directUrl != null ? directUrl : jdbcUrl;
    }

    /** Whether the pool's connections go through a transaction-pooling proxy (see the builder). */
    public boolean transactionPooler() {
        return transactionPooler;
    }

    /** The URL of the connections that need a server session of their own (migrations, the listener), or null. */
    public String directUrl() {
        return directUrl;
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

    public Duration timerLead() {
        return timerLead;
    }

    public io.pgdurable.longpoll.LongPollSignals longPollSignals() {
        return longPollSignals;
    }

    /** Where the provider reports its metrics ({@link ProviderMetrics#NONE} by default). */
    public ProviderMetrics metrics() {
        return metrics;
    }

    /** Terminal acks per batched flush; 1 (the default) acks each item in its own call, as without batching. */
    public int ackBatchSize() {
        return ackBatchSize;
    }

    /** With batched acks: flush once no new ack arrived for this long (0 = as soon as the flusher is free). */
    public Duration ackFlushIdle() {
        return ackFlushIdle;
    }

    /** With batched acks: how long {@code close()} keeps flushing buffered acks (0 = not at all). */
    public Duration ackDrainTimeout() {
        return ackDrainTimeout;
    }

    /** Most items per statement of a batched enqueue. */
    public int enqueueChunkItems() {
        return enqueueChunkItems;
    }

    /** Most bytes (the items' JSON, UTF-8) per statement of a batched enqueue; an item larger goes alone. */
    public int enqueueChunkBytes() {
        return enqueueChunkBytes;
    }

    /** How long a batched enqueue may keep retrying a chunk that failed retryably (0 = fail fast). */
    public Duration enqueueRetryBudget() {
        return enqueueRetryBudget;
    }

    /** Most bytes (the items' JSON) one batched fetch returns; its first item is returned even when larger. */
    public int fetchBatchMaxBytes() {
        return fetchBatchMaxBytes;
    }

    /** Never shows a password, whether given separately or inside the URL. */
    @Override
    public String toString() {
        return "PostgresProviderConfig{" + (jdbcUrl != null ? "url=" + redactUrl(jdbcUrl) : "dataSource=" + dataSource)
                + ", schema=" + schema + ", poolSize=" + poolSize + ", migrationPolicy=" + migrationPolicy
                + ", maxPayloadBytes=" + maxPayloadBytes
                + (ackBatchSize > 1 ? ", ackBatchSize=" + ackBatchSize : "") + ", longPolling=" + longPolling
                + (transactionalNotify ? ", transactionalNotify=true" : "")
                + (inlineNotifyWhenIdle ? "" : ", inlineNotifyWhenIdle=false")
                + (asyncClaimCommit ? "" : ", asyncClaimCommit=false")
                + (handOverToParkedFetches ? "" : ", handOverToParkedFetches=false")
                + (handOverAcrossProcesses ? ", handOverAcrossProcesses=true" : "")
                + (transactionPooler ? ", transactionPooler=true" : "")
                + (longPolling && !timerLead.equals(DEFAULT_TIMER_LEAD) ? ", timerLead=" + timerLead : "")
                + (directUrl != null ? ", directUrl=" + redactUrl(directUrl) : "")
                + (longPolling ? ", listener=" + listenerDriver + (listenerUrl != null ? " at "
                        + redactUrl(listenerUrl) : "") : "") + "}";
    }

    /** The URL with any password parameter value replaced. */
    public static String redactUrl(String url) {
        return url == null ? null : url.replaceAll("(?i)(password=)[^&;]*", "$1***")
                .replaceAll("(//[^/:@]+:)[^@/]*@", "$1***@");
    }

    /**
     * Checks a URL the way {@link Builder#build()} checks {@code jdbcUrl}, {@code directUrl} and {@code listenerUrl},
     * naming it {@code name} in the message, so that a tool taking the URL under a name of its own (a command-line
     * option) reports the name its user typed. A null URL passes. The message never shows a password.
     *
     * @throws IllegalArgumentException when the URL is not a {@code jdbc:postgresql:} URL the driver can read
     */
    public static void checkJdbcUrl(String name, String url) {
        if (url == null) {
            return;
        }
        if (!url.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException(name + " must start with 'jdbc:postgresql:', was '" + redactUrl(url)
                    + "'");
        }
        // pgjdbc has no user:password@ part: it reads it as part of the host name, and the connection then fails
        // with an unknown host that names neither the mistake nor the fix.
        int authority = url.startsWith("jdbc:postgresql://") ? "jdbc:postgresql://".length() : -1;
        if (authority > 0) {
            int end = url.length();
            for (char c : new char[] {'/', '?'}) {
                int i = url.indexOf(c, authority);
                if (i >= 0 && i < end) {
                    end = i;
                }
            }
            if (url.substring(authority, end).contains("@")) {
                throw new IllegalArgumentException(name + " has a user (and password) before the host, which the "
                        + "PostgreSQL JDBC driver does not read: pass them as parameters instead, "
                        + "jdbc:postgresql://HOST:PORT/DATABASE?user=NAME&password=SECRET, was '" + redactUrl(url)
                        + "'");
            }
        }
        // A URL the driver cannot parse (a port that is not a number, a malformed parameter) would otherwise surface
        // at the first connection as "No suitable driver", naming neither the URL nor the mistake.
        if (org.postgresql.Driver.parseURL(url, null) == null) {
            throw new IllegalArgumentException(name + " is not a URL the PostgreSQL driver can read (check the host, "
                    + "the port and the parameters), was '" + redactUrl(url) + "'");
        }
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
        private boolean transactionalNotify;
        private boolean inlineNotifyWhenIdle = true;
        private boolean asyncClaimCommit = true;
        private boolean handOverToParkedFetches = true;
        private boolean handOverAcrossProcesses;
        private String listenerUrl;
        private boolean transactionPooler;
        private String directUrl;
        private ListenerDriver listenerDriver = ListenerDriver.PGJDBC_NG;
        private Duration fallbackPollInterval = Duration.ofSeconds(1);
        private Duration wakeCoalescing = Duration.ofMillis(100);
        private Duration timerScanTimeout = Duration.ofMillis(200);
        private Duration recoveryScanInterval = Duration.ofSeconds(60);
        private int maxParkedWaiters = 1024;
        private Duration heartbeatInterval = Duration.ofSeconds(1);
        private int maxTrackedDeadlines = 1024;
        private Duration timerLead = DEFAULT_TIMER_LEAD;
        private io.pgdurable.longpoll.LongPollSignals longPollSignals = io.pgdurable.longpoll.LongPollSignals.NONE;
        private ProviderMetrics metrics = ProviderMetrics.NONE;
        private int ackBatchSize = 1;
        private Duration ackFlushIdle = Duration.ofMillis(2);
        private Duration ackDrainTimeout = Duration.ofSeconds(2);
        private int enqueueChunkItems = DEFAULT_ENQUEUE_CHUNK_ITEMS;
        private int enqueueChunkBytes = DEFAULT_ENQUEUE_CHUNK_BYTES;
        private Duration enqueueRetryBudget = Duration.ZERO;
        private int fetchBatchMaxBytes = DEFAULT_FETCH_BATCH_MAX_BYTES;

        private Builder() {}

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
         * Whether this provider's own writes notify other processes from inside their transactions, through the
         * schema's notify triggers, instead of by announcements sent after the commit (the default, false). On: a
         * process that dies right after a commit has still told everyone (no crash window), but every notifying
         * commit of the database then waits for the previous one's disk flush (no group commit): measured with
         * {@code bench --scenarios notify-overhead}, see docs/long-polling.md. Its own waiters are woken at once
         * either way. Takes effect only on an activated schema, like every notification.
         */
        public Builder transactionalNotify(boolean enabled) {
            this.transactionalNotify = enabled;
            return this;
        }

        /**
         * Whether a write whose announcement would go out alone (the announcer idle: nothing pending, nothing sent
         * within its 4 ms spacing) carries its NOTIFY inside its own transaction, in the same statement, instead of
         * leaving it to the announcer's thread and round trip after the commit (default true). Other processes are
         * then woken at the commit itself, one hand-off and one round trip sooner; under load the announcer batches
         * as before, so group commit is kept. Only single-item enqueues, single acks and turn acks do it; see
         * docs/long-polling.md for the measurement. No effect with {@code transactionalNotify} (the triggers notify
         * then) or on a schema that is not activated.
         */
        public Builder inlineNotifyWhenIdle(boolean enabled) {
            this.inlineNotifyWhenIdle = enabled;
            return this;
        }

        /**
         * Whether claims — {@code fetchWorkItem}, {@code fetchWorkItems}, {@code fetchOrchestrationItem} — commit
         * without waiting for the server's WAL flush (default true; {@code synchronous_commit} off for the claiming
         * transaction only). A claim is a lease: if the server crashes before the flush, the claim is lost and the
         * work is claimable again, exactly as after an early lease expiry, and the holder's ack fails on its token
         * (at-least-once, never a duplicated completion). Acks, enqueues and turn acks always wait for the flush.
         * About a third more single-item drain throughput and a faster claim after every wake
         * (docs/benchmarks.md); false restores a flush wait on every claim.
         */
        public Builder asyncClaimCommit(boolean enabled) {
            this.asyncClaimCommit = enabled;
            return this;
        }

        /**
         * Whether a worker item this provider writes — {@code enqueueForWorker}, and the activities a turn schedules
         * in {@code ackOrchestrationItem} — goes straight to one of this provider's own parked {@code fetchWorkItem}
         * calls when one is waiting for it (default true; long polling only). The item is written already leased to
         * that fetch (its lock timeout, attempt 1) in the write's own transaction, and the fetch returns it after the
         * commit without a claim: the wake costs no statement and no round trip (docs/long-polling.md, "Hand-over").
         * Items with a session, batched fetches and fetches with a session configuration always claim. Should the
         * fetch stop waiting before the hand-over, the writer releases the item at once. No effect with
         * {@code transactionalNotify}. False: every parked fetch claims after its wake, as before.
         */
        public Builder handOverToParkedFetches(boolean enabled) {
            this.handOverToParkedFetches = enabled;
            return this;
        }

        /**
         * Whether worker items are handed over between processes (default false; migration V15, docs/long-polling.md
         * "Hand-over across processes"). Both sides need it. A long-polling provider keeps a row saying how many of its
         * {@code fetchWorkItem} calls are parked for untagged items without a session (written when that number
         * changes and has rested for a millisecond; nothing while it stays the same), and its listener's session holds
         * an advisory lock that tells others it still hears them. A provider's {@code enqueueForWorker} of such an
         * item, when none of its own fetches takes it ({@code handOverToParkedFetches}), leases it in the enqueue's
         * transaction to a parked fetch of another such process and sends it in the NOTIFY (items under 8000 bytes
         * with the header): that fetch returns it without a claim. A fetch that stopped waiting meanwhile gives the
         * item back at once (attempt not counted); an item handed to a process in the instant it dies waits for its
         * lease, like any item of a process that died. Costs: one statement per change of the parked count, one
         * lookup in a small table per offered enqueue. No effect with {@code transactionalNotify}; with long polling
         * off, only the enqueue side applies.
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
            checkJdbcUrl("jdbcUrl", jdbcUrl);
            checkJdbcUrl("directUrl", directUrl);
            if (transactionPooler) {
                checkTransactionPooler();
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
            Objects.requireNonNull(metrics, "metrics");
            if (longPolling) {
                if (dataSource == null && poolSize < 2) {
                    throw new IllegalArgumentException("long polling needs a pool of at least two connections "
                            + "(poolSize was " + poolSize + "): a parked fetch's retry and the scans share it");
                }
                if (dataSource != null && listenerUrl == null && directUrl == null) {
                    throw new IllegalArgumentException("long polling with a DataSource needs listenerUrl (or "
                            + "directUrl): the listener opens its own direct connection");
                }
                checkJdbcUrl("listenerUrl", listenerUrl);
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
                bounded("timerLead", timerLead, MAX_TIMER_LEAD);
                if (maxTrackedDeadlines < 16) {
                    throw new IllegalArgumentException("maxTrackedDeadlines must be at least 16, was "
                            + maxTrackedDeadlines);
                }
            }
            if (maxPayloadBytes < 1024) {
                throw new IllegalArgumentException("maxPayloadBytes must be at least 1024, was " + maxPayloadBytes);
            }
            inRange("ackBatchSize", ackBatchSize, 1, MAX_ACK_BATCH_SIZE);
            bounded("ackFlushIdle", ackFlushIdle, MAX_ACK_FLUSH_IDLE);
            bounded("ackDrainTimeout", ackDrainTimeout, MAX_BATCH_WAIT);
            inRange("enqueueChunkItems", enqueueChunkItems, 1, MAX_ENQUEUE_CHUNK_ITEMS);
            inRange("enqueueChunkBytes", enqueueChunkBytes, 1024, MAX_BATCH_BYTES);
            bounded("enqueueRetryBudget", enqueueRetryBudget, MAX_BATCH_WAIT);
            inRange("fetchBatchMaxBytes", fetchBatchMaxBytes, 1024, MAX_BATCH_BYTES);
            return new PostgresProviderConfig(this);
        }

        /**
         * What a transaction pooler needs: a direct URL for the session users, distinct from the pool's URL, and a
         * pool URL that does not ask for server-side prepared statements itself (the URL's parameters would win over
         * the provider's {@code prepareThreshold=0}).
         */
        private void checkTransactionPooler() {
            if (directUrl == null) {
                throw new IllegalArgumentException("transactionPooler needs directUrl, a URL that reaches PostgreSQL "
                        + "without the pooler: migrations and schema checks hold a session advisory lock"
                        + (longPolling ? ", and the long-poll listener's LISTEN (listenerUrl, else directUrl) needs "
                        + "a session of its own" : "") + "; see docs/pgbouncer.md");
            }
            if (jdbcUrl != null && (jdbcUrl.equals(directUrl) || jdbcUrl.equals(listenerUrl))) {
                throw new IllegalArgumentException((jdbcUrl.equals(directUrl) ? "directUrl" : "listenerUrl")
                        + " is the same URL as jdbcUrl, which goes through the transaction pooler; point it at "
                        + "PostgreSQL itself (or at a session-mode pooler)");
            }
            if (jdbcUrl != null) {
                java.util.Properties parsed = org.postgresql.Driver.parseURL(jdbcUrl, null);
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
}
