package io.pgdurable.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.internal.longpoll.Announcer;
import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.NotifyChannel;
import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.LongPollView;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.CustomStatus;
import io.pgdurable.spi.DispatcherCapabilityFilter;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.SystemStats;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL provider: one schema per task hub, one function call per operation, the application clock passed
 * into every lease and visibility decision. It never sleeps or waits for work; a fetch with a poll timeout returns
 * at once in short-poll mode. The one exception is a batched fetch ({@link #fetchWorkItems}) asked to wait for a
 * minimum of items: in short-poll mode it repeats its claim every {@value BatchFetcher#BATCH_POLL_PAUSE_MS} ms
 * within its {@code maxWait}.
 *
 * <p>This class builds the parts and hands each operation to the one that owns it: the orchestrator queue
 * ({@link OrchestratorQueue}), the worker queue and sessions ({@link WorkerQueue}), history and state reads
 * ({@link InstanceReads}) and management ({@link PostgresAdmin}). How a write reaches the fetches waiting for it is
 * chosen here once, as the provider's {@link WritePath}; connections come from {@link ProviderConnections}.
 */
public final class PostgresProvider implements OrchestrationProvider {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresProvider.class);
    private static final String VERSION = "0.1.0";

    private final PostgresProviderConfig config;
    private final RenewingPool ownedPool;
    private final SqlRunner db;
    private final Statements sql;
    private final LongPoller longPoller;
    private final Announcer announcer;
    /** Hand-over across processes, the parked side; null unless configured with long polling. */
    private final RemoteHandOver remoteHandOver;
    private final BatchAcker acker;
    private final ProviderMetrics.Observer observer;
    private final OrchestratorQueue orchestrators;
    private final WorkerQueue workers;
    private final InstanceReads reads;
    private final PostgresAdmin admin;
    /** The application clock against the server's: the offset, and the gate every claim passes. */
    private final ClockSkewMonitor clockSkew;

    private PostgresProvider(PostgresProviderConfig config) {
        this.config = config;
        Clock clock = config.clock();
        Payloads payloads = new Payloads(config.maxPayloadBytes());
        // This provider's announcer origin: names it in announcements and in hand-overs across processes.
        String origin = Announcer.newOrigin();
        this.sql = new Statements(config.schema());
        this.observer = Objects.requireNonNull(config.metrics().open(config.schema()), "metrics observer");
        DataSource dataSource;
        if (config.dataSource() != null) {
            dataSource = config.dataSource();
            this.ownedPool = null;
            if (config.transactionPooler()) {
                ProviderConnections.checkNoServerPrepares(dataSource);
            }
        } else {
            try {
                this.ownedPool = ProviderConnections.ownedPool(config, observer.poolMetrics());
            } catch (RuntimeException e) {
                observer.closed();
                throw e;
            }
            dataSource = ownedPool;
            if (!config.transactionPooler()) {
                // before the first statement of the provider: an undeclared pooler must not run one
                try {
                    TransactionPoolerCheck.refuseUndeclared(ProviderConnections.poolerCheckSource(config),
                            JdbcUrls.redact(config.jdbcUrl()));
                } catch (RuntimeException e) {
                    ownedPool.close();
                    observer.closed();
                    throw e;
                }
            }
        }
        this.db = new SqlRunner(dataSource, observer);
        // Observer.NONE is not LongPollSignals.NONE: without metrics the configured signals go on alone.
        LongPollSignals signals = observer == ProviderMetrics.Observer.NONE ? config.longPollSignals()
                : LongPollSignals.both(config.longPollSignals(), observer);
        String channel = NotifyChannel.forSchema(config.schema());
        LongPoller poller = null;
        Announcer announcing = null;
        ClockSkewMonitor skew = new ClockSkewMonitor(new ServerClock(db, clock), config);
        try {
            prepareSchema(config);
            skew.start(); // before any thread starts: a clock past the limit stops the start here
            if (config.longPolling()) {
                poller = new LongPoller(new LongPoller.Settings(config.fallbackPollInterval(),
                        config.wakeCoalescing(), config.recoveryScanInterval(), config.maxParkedWaiters(),
                        config.heartbeatInterval(), config.maxTrackedDeadlines(), config.timerLead()), clock,
                        new PostgresWorkScanner(dataSource, sql, config.timerScanTimeout()),
                        ProviderConnections.listener(config, config.handOverAcrossProcesses()), channel, signals);
                poller.start();
            }
            LongPoller listening = poller;
            announcing = new Announcer(origin, poller,
                    announcements -> sendAnnouncements(dataSource, channel, announcements),
                    config.longPolling() ? null : new SchemaMigrator(dataSource, config)::activated,
                    SchemaMigrator.ACTIVATION_RECHECK,
                    // Only a provider that listens hears other processes arrive; one that does not always sends.
                    listening == null ? null : () -> othersListening(dataSource, channel, listening.listenerPid()),
                    channel, signals, clock);
        } catch (RuntimeException e) {
            skew.close();
            if (announcing != null) {
                announcing.close();
            }
            if (poller != null) {
                poller.close();
            }
            db.markClosed();
            if (ownedPool != null) {
                ownedPool.close();
            }
            observer.closed();
            throw e;
        }
        this.longPoller = poller;
        this.announcer = announcing;
        this.clockSkew = skew;
        Leases leases = new Leases(db, sql, clock, announcer::announce);
        OrchestrationClaimer claimer = new OrchestrationClaimer(db, sql, clock, leases);
        WriteAnnouncements announcements = new WriteAnnouncements(announcer, new TurnsInProgress(), channel);
        WritePath writes = new AnnouncedWrites(db, sql, announcements);
        if (config.handOverAcrossProcesses()) {
            writes = new OfferedWrites(writes, db, sql, announcements, origin);
        }
        if (longPoller != null) {
            writes = new HandedOverWrites(writes, db, sql,
                    new HandOver(longPoller, leases, announcer::announce, clockSkew), claimer, leases, announcements);
        }
        this.remoteHandOver = longPoller != null && config.handOverAcrossProcesses()
                ? new RemoteHandOver(db, sql, clock, longPoller, leases, origin, config.schema(), announcer::announce,
                        signals)
                : null;
        if (remoteHandOver != null) {
            remoteHandOver.start();
        }
        BatchEnqueuer batchEnqueuer = new BatchEnqueuer(db, sql, payloads, clock, config.enqueueChunkItems(),
                config.enqueueChunkBytes(), config.enqueueRetryBudget(), announcer::announce);
        this.acker = new BatchAcker(db, sql, config.schema(), config.ackBatchSize(), config.ackFlushIdle(),
                config.connectionTimeout(), announcer::announce);
        this.orchestrators = new OrchestratorQueue(sql, clock, payloads, claimer, leases, longPoller, writes,
                announcements, batchEnqueuer, clockSkew);
        this.workers = new WorkerQueue(db, sql, clock, payloads, leases, longPoller, writes, announcements,
                new BatchFetcher(db, sql, clock, leases, config.fetchBatchMaxBytes(), longPoller,
                        announcer::announce, clockSkew),
                batchEnqueuer, acker, clockSkew);
        this.reads = new InstanceReads(db, sql, clock, payloads);
        this.admin = new PostgresAdmin(db, reads, sql, clock);
        this.acker.start();
        observer.started(this);
    }

    /** Migrates or verifies the schema as configured; a long-polling provider needs it activated. */
    private static void prepareSchema(PostgresProviderConfig config) {
        SchemaMigrator migrator = new SchemaMigrator(ProviderConnections.migrationSource(config), config);
        if (config.migrationPolicy() == MigrationPolicy.APPLY_ALL) {
            migrator.applyAll(config.longPolling());
            return;
        }
        migrator.verify();
        if (!config.longPolling()) {
            return;
        }
        if (!migrator.activated()) {
            throw ProviderException.permanent("verify", "long polling is on but schema '" + config.schema()
                    + "' was never activated and VERIFY_ONLY changes nothing; run `pgdurable activate` or "
                    + "start one provider with APPLY_ALL and long polling");
        }
        SchemaMigrator.NotifyTriggers triggers = migrator.notifyTriggers();
        if (!triggers.allEnabled()) {
            LOG.warn("pgdurable: schema {} is activated but its notify triggers are {}; writes by other "
                    + "than pgdurable providers reach parked fetches through the fallback probe only "
                    + "until `pgdurable activate` runs again", config.schema(), triggers.describe());
        }
    }

    /**
     * The announcer's statement, on a pooled connection of its own choosing rather than through the runner: it must
     * still send the hints of acks drained while the provider closes.
     */
    private void sendAnnouncements(DataSource dataSource, String channel, List<String> announcements)
            throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.announce)) {
            ps.setString(1, channel);
            ps.setArray(2, c.createArrayOf("text", announcements.toArray()));
            ps.execute();
        }
    }

    /** Whether a process other than this one listens on the channel (its listener's session {@code ownPid}). */
    private boolean othersListening(DataSource dataSource, String channel, int ownPid) throws SQLException {
        int[] keys = NotifyChannel.listenerLockKeys(channel);
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.otherListeners)) {
            ps.setInt(1, keys[0]);
            ps.setInt(2, keys[1]);
            ps.setInt(3, ownPid);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /** Connects, migrates or verifies the schema according to the configuration, and returns a ready provider. */
    public static PostgresProvider create(PostgresProviderConfig config) {
        return new PostgresProvider(config);
    }

    /**
     * The pool a provider opens for {@code config} when it is given no data source. Public so that tools working
     * beside a provider (the CLI's schema commands) connect the same way and report a failure the same way: a
     * {@link ProviderException} naming the URL (password masked) and the driver's reason, permanent for a refused
     * login or a missing database, retryable when the server does not answer. The caller closes the pool.
     */
    public static HikariDataSource openPool(PostgresProviderConfig config) {
        return ProviderConnections.openPool(config);
    }

    public PostgresProviderConfig config() {
        return config;
    }

    @Override
    public String name() {
        return "pgdurable";
    }

    @Override
    public String version() {
        return VERSION;
    }

    // ------------------------------------------------------------------------------------------ orchestrator queue

    @Override
    public Optional<FetchedOrchestration> fetchOrchestrationItem(Duration lockTimeout, Duration pollTimeout,
                                                                 DispatcherCapabilityFilter filter) {
        return orchestrators.fetch(lockTimeout, pollTimeout, filter);
    }

    @Override
    public void ackOrchestrationItem(String lockToken, long executionId, List<Event> historyDelta,
                                     List<WorkItem> workerItems, List<WorkItem> orchestratorItems,
                                     ExecutionMetadata metadata,
                                     List<ScheduledActivityIdentifier> cancelledActivities) {
        orchestrators.ack(lockToken, executionId, historyDelta, workerItems, orchestratorItems, metadata,
                cancelledActivities);
    }

    @Override
    public void abandonOrchestrationItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        orchestrators.abandon(lockToken, delay, ignoreAttempt);
    }

    @Override
    public void renewOrchestrationItemLock(String lockToken, Duration extendFor) {
        orchestrators.renew(lockToken, extendFor);
    }

    @Override
    public void enqueueForOrchestrator(WorkItem item, Duration delay) {
        orchestrators.enqueue(item, delay);
    }

    /**
     * Enqueues orchestrator messages in chunks like {@link #enqueueAllForWorker(List)}; each item becomes visible as
     * with {@link #enqueueForOrchestrator(WorkItem, Duration)} (the same delay for all, a timer never before its
     * fire time).
     */
    @Override
    public void enqueueAllForOrchestrator(List<WorkItem> items, Duration delay) {
        orchestrators.enqueueAll(items, delay);
    }

    // ------------------------------------------------------------------------------------------ history and state

    @Override
    public List<Event> read(String instance) {
        return reads.history("read", instance, null);
    }

    @Override
    public List<Event> readWithExecution(String instance, long executionId) {
        return reads.history("readWithExecution", instance, executionId);
    }

    @Override
    public void appendWithExecution(String instance, long executionId, List<Event> newEvents) {
        reads.append(instance, executionId, newEvents);
    }

    @Override
    public Optional<CustomStatus> getCustomStatus(String instance, long lastSeenVersion) {
        return reads.customStatus(instance, lastSeenVersion);
    }

    @Override
    public Optional<String> getKvValue(String instance, String key) {
        String op = "getKvValue";
        Payloads.notNull(op, "key", key);
        return Optional.ofNullable(reads.kvValues(op, instance, key).get(key));
    }

    @Override
    public Map<String, String> getKvAllValues(String instance) {
        return reads.kvValues("getKvAllValues", instance, null);
    }

    @Override
    public Optional<SystemStats> getInstanceStats(String instance) {
        return reads.stats(instance);
    }

    @Override
    public Optional<ProviderAdmin> asManagementCapability() {
        return Optional.of(admin);
    }

    // ------------------------------------------------------------------------------------------ worker queue

    @Override
    public void enqueueForWorker(WorkItem item) {
        workers.enqueue(item);
    }

    /**
     * Enqueues activities in chunks of at most {@code enqueueChunkItems} items and {@code enqueueChunkBytes} bytes,
     * one statement (one transaction) per chunk, in list order. Every item is validated before anything is stored.
     */
    @Override
    public void enqueueAllForWorker(List<WorkItem> items) {
        workers.enqueueAll(items);
    }

    @Override
    public Optional<FetchedWorkItem> fetchWorkItem(Duration lockTimeout, Duration pollTimeout,
                                                   SessionFetchConfig session, TagFilter tagFilter) {
        return workers.fetch(lockTimeout, pollTimeout, session, tagFilter);
    }

    /**
     * Batched fetch: claim attempts of up to {@code maxItems - held} items (one SQL call each), until at least
     * {@code minItems} are held, the reply is full (count or bytes) or {@code maxWait} ends. With long polling an
     * attempt that finds nothing parks (the long-poll wait), and an empty return ends the fetch; in short-poll mode
     * attempts repeat every {@value BatchFetcher#BATCH_POLL_PAUSE_MS} ms within {@code maxWait}.
     */
    @Override
    public List<FetchedWorkItem> fetchWorkItems(Duration lockTimeout, WorkBatch batch, SessionFetchConfig session,
                                                TagFilter tagFilter) {
        return workers.fetchBatch(lockTimeout, batch, session, tagFilter);
    }

    /**
     * One round trip and one transaction ({@code ack_and_fetch_work_item}): the ack, then a claim without waiting.
     * The ack already committed when the next item turns out undecodable, so that item is released and the result
     * is empty (the following fetch reports it) rather than an error that would read as a failed ack.
     */
    @Override
    public Optional<FetchedWorkItem> ackWorkItemAndFetchNext(String lockToken, WorkItem completion,
                                                             Duration lockTimeout, SessionFetchConfig session,
                                                             TagFilter tagFilter) {
        return workers.ackAndFetchNext(lockToken, completion, lockTimeout, session, tagFilter);
    }

    /**
     * All acks in one {@code ack_work_items} call per {@value BatchAcker#MAX_ACKS_PER_CALL}, on the caller's thread
     * (no hand-off to the group-commit flusher, whatever {@code ackBatchSize} says). Every argument is checked before
     * anything is sent.
     */
    @Override
    public List<AckResult> ackWorkItems(List<WorkAck> acks) {
        return workers.ackAll(acks);
    }

    @Override
    public void ackWorkItem(String lockToken, WorkItem completion) {
        workers.ack(lockToken, completion);
    }

    /** Acks handed to the batched-ack flusher and not yet answered; always 0 with {@code ackBatchSize} 1. */
    public int pendingAcks() {
        return workers.pendingAcks();
    }

    @Override
    public void renewWorkItemLock(String lockToken, Duration extendFor) {
        workers.renew(lockToken, extendFor);
    }

    @Override
    public void abandonWorkItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        workers.abandon(lockToken, delay, ignoreAttempt);
    }

    @Override
    public int renewSessionLock(List<String> ownerIds, Duration extendFor, Duration idleTimeout) {
        return workers.renewSessionLock(ownerIds, extendFor, idleTimeout);
    }

    @Override
    public int cleanupOrphanedSessions(Duration idleTimeout) {
        return workers.cleanupOrphanedSessions();
    }

    // ------------------------------------------------------------------------------------------ life cycle

    @Override
    public void close() {
        if (!db.markClosed()) {
            return;
        }
        clockSkew.close();
        if (remoteHandOver != null) {
            remoteHandOver.close(); // other processes stop handing items over before the listener goes
        }
        if (longPoller != null) {
            longPoller.close(); // parked fetches return empty before the pool goes away
        }
        acker.close(config.ackDrainTimeout()); // flushes buffered acks while the pool is still open
        announcer.close(); // sends what the drained acks announced, then the pool may go
        if (ownedPool != null) {
            ownedPool.close();
        }
        observer.closed();
    }

    /**
     * Whether the database answers a trivial query through the pool (within the pool's connection timeout and one
     * round trip) and, with long polling, whether the listener is up. For health endpoints; never throws.
     */
    public ProviderHealth health() {
        String error = null;
        try {
            db.call("health", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.ping)) {
                    ps.execute();
                    return null;
                }
            });
        } catch (RuntimeException e) {
            error = e.getMessage();
        }
        return new ProviderHealth(error == null, error, longPoller == null ? null : longPoller.isListening());
    }

    /**
     * How far this provider's clock ({@link PostgresProviderConfig#clock()}) was from the database server's
     * {@code clock_timestamp()} at the last check: positive when it is ahead. Measured at start (the best of a few
     * round trips) and every {@code checkInterval} of its {@link ClockSkewBounds}, to within half a round trip.
     * Empty with {@code clockSkewCheck(false)}. Past their {@code limit} the provider takes no lease
     * (docs/operations.md, "Clock skew between nodes and the server").
     */
    public Optional<Duration> clockOffset() {
        return clockSkew.offset();
    }

    /** Announcements waiting for the announcer's thread to send them to other processes (a backlog gauge). */
    public int pendingAnnouncements() {
        return announcer.pending();
    }

    /** The provider's own pool, or null when the application gave a DataSource (tests read its renewals). */
    RenewingPool ownedPool() {
        return ownedPool;
    }

    /**
     * A read-only view of long polling (listening, parked fetches, tracked deadlines, wakes) while it is on; empty
     * when the provider short-polls. Metrics and the benchmark read it.
     */
    public Optional<LongPollView> longPolling() {
        return longPoller == null ? Optional.empty() : Optional.of(longPoller.view());
    }

    /** The clock check, for the library's tests. */
    ClockSkewMonitor clockSkewMonitor() {
        return clockSkew;
    }

    /** The long-poll engine itself, for the library's tests; null when long polling is off. */
    LongPoller longPollEngine() {
        return longPoller;
    }
}
