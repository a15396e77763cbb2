package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.setLongOrNull;
import static io.pgdurable.postgres.SqlRunner.singleInt;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.MetricsTrackerFactory;
import io.pgdurable.internal.Json;
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
import io.pgdurable.spi.SemverRange;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;
import javax.sql.DataSource;
import io.pgdurable.longpoll.Announcer;
import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.LongPoller;
import io.pgdurable.longpoll.NotificationListener;
import io.pgdurable.longpoll.NotifyChannel;
import io.pgdurable.longpoll.PgjdbcListener;
import io.pgdurable.longpoll.PgjdbcNgListener;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.Route;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import org.postgresql.PGConnection;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL provider: one schema per task hub, one function call per operation, the application clock passed
 * into every lease and visibility decision. It never sleeps or waits for work; a fetch with a poll timeout returns
 * at once in short-poll mode. The one exception is a batched fetch ({@link #fetchWorkItems}) asked to wait for a
 * minimum of items: in short-poll mode it repeats its claim every {@value BatchFetcher#BATCH_POLL_PAUSE_MS} ms
 * within its {@code maxWait}.
 *
 * <p>This class wires the parts together and keeps the single-item operations; batching (docs/batching.md) lives in
 * {@link BatchFetcher}, {@link BatchEnqueuer} and {@link BatchAcker}, the lock-token operations in {@link Leases},
 * the orchestrator claim in {@link OrchestrationClaimer}, and connection handling and error mapping in
 * {@link SqlRunner}.
 */
public final class PostgresProvider implements OrchestrationProvider {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresProvider.class);
    private static final String VERSION = "0.1.0";

    private final PostgresProviderConfig config;
    private final RenewingPool ownedPool;
    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final Payloads payloads;
    private final PostgresAdmin admin;
    private final LongPoller longPoller;
    private final Announcer announcer;
    /** The task hub's notification channel (a value passed to pg_notify, never spliced into SQL). */
    private final String channel;
    private final Leases leases;
    private final OrchestrationClaimer orchestrations;
    private final BatchFetcher batchFetcher;
    private final BatchEnqueuer batchEnqueuer;
    /** Hand-over across processes, the parked side (V15); null unless configured with long polling. */
    private final RemoteHandOver remoteHandOver;
    /** How a single-item write reaches the fetches waiting for it: chosen once, here. */
    private final WritePath writes;
    private final WriteAnnouncements announcements;
    /** Acks in one call per list ({@link #ackWorkItems}) and, with {@code ackBatchSize} above 1, grouped single acks. */
    private final BatchAcker acker;
    private final ProviderMetrics.Observer observer;

    private PostgresProvider(PostgresProviderConfig config) {
        this.config = config;
        this.clock = config.clock();
        this.payloads = new Payloads(config.maxPayloadBytes());
        // This provider's announcer origin: names it in announcements and in hand-overs across processes.
        String origin = Announcer.newOrigin();
        boolean takesAcross = config.handOverAcrossProcesses();
        this.sql = new Statements(config.schema());
        this.admin = new PostgresAdmin(this, sql, clock);
        this.observer = Objects.requireNonNull(config.metrics().open(config.schema()), "metrics observer");
        DataSource dataSource;
        if (config.dataSource() != null) {
            dataSource = config.dataSource();
            this.ownedPool = null;
            if (config.transactionPooler()) {
                checkNoServerPrepares(dataSource);
            }
        } else {
            MetricsTrackerFactory poolMetrics = observer.poolMetrics();
            RenewingPool pool;
            try {
                pool = new RenewingPool(() -> withMetrics(openPool(config), poolMetrics), probeSource(config),
                        Math.max(250, config.connectionTimeout().toMillis()));
            } catch (RuntimeException e) {
                observer.closed();
                throw e;
            }
            this.ownedPool = pool;
            dataSource = ownedPool;
        }
        this.db = new SqlRunner(dataSource, observer);
        // Observer.NONE is not LongPollSignals.NONE: without metrics the configured signals go on alone.
        LongPollSignals signals = observer == ProviderMetrics.Observer.NONE ? config.longPollSignals()
                : LongPollSignals.both(config.longPollSignals(), observer);
        LongPoller poller = null;
        Announcer announcing = null;
        try {
            SchemaMigrator migrator = new SchemaMigrator(migrationSource(config), config);
            if (config.migrationPolicy() == MigrationPolicy.APPLY_ALL) {
                migrator.applyAll(config.longPolling());
            } else {
                migrator.verify();
                if (config.longPolling() && !migrator.activated()) {
                    throw ProviderException.permanent("verify", "long polling is on but schema '" + config.schema()
                            + "' was never activated and VERIFY_ONLY changes nothing; run `pgdurable activate` or "
                            + "start one provider with APPLY_ALL and long polling");
                }
                if (config.longPolling()) {
                    SchemaMigrator.NotifyTriggers triggers = migrator.notifyTriggers();
                    if (!triggers.allEnabled()) {
                        LOG.warn("pgdurable: schema {} is activated but its notify triggers are {}; writes by other "
                                + "than pgdurable providers reach parked fetches through the fallback probe only "
                                + "until `pgdurable activate` runs again", config.schema(), triggers.describe());
                    }
                }
            }
            String channel = NotifyChannel.forSchema(config.schema());
            this.channel = channel;
            if (config.longPolling()) {
                poller = new LongPoller(new LongPoller.Settings(config.fallbackPollInterval(),
                        config.wakeCoalescing(), config.recoveryScanInterval(), config.maxParkedWaiters(),
                        config.heartbeatInterval(), config.maxTrackedDeadlines(), config.timerLead()), clock,
                        new PostgresWorkScanner(dataSource, sql, config.timerScanTimeout()),
                        listener(config, takesAcross),
                        channel, signals);
                poller.start();
            }
            announcing = new Announcer(origin, poller,
                    announcements -> sendAnnouncements(dataSource, channel, announcements),
                    config.longPolling() ? null : new SchemaMigrator(dataSource, config)::activated,
                    SchemaMigrator.ACTIVATION_RECHECK, channel, signals, clock);
        } catch (RuntimeException e) {
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
        this.leases = new Leases(db, sql, clock, announcer::announce);
        this.orchestrations = new OrchestrationClaimer(db, sql, clock, leases);
        this.announcements = new WriteAnnouncements(announcer, new TurnsInProgress(), channel);
        WritePath path = new AnnouncedWrites(db, sql, announcements);
        if (config.handOverAcrossProcesses()) {
            path = new OfferedWrites(path, db, sql, announcements, origin);
        }
        if (longPoller != null) {
            path = new HandedOverWrites(path, db, sql, new HandOver(longPoller, leases, announcer::announce),
                    orchestrations, leases, announcements);
        }
        this.writes = path;
        this.remoteHandOver = longPoller != null && takesAcross
                ? new RemoteHandOver(db, sql, clock, longPoller, leases, origin, config.schema(), announcer::announce,
                        signals)
                : null;
        if (remoteHandOver != null) {
            remoteHandOver.start();
        }
        this.batchFetcher = new BatchFetcher(db, sql, clock, leases, config.fetchBatchMaxBytes(), longPoller,
                announcer::announce);
        this.batchEnqueuer = new BatchEnqueuer(db, sql, payloads, clock, config.enqueueChunkItems(),
                config.enqueueChunkBytes(), config.enqueueRetryBudget(), announcer::announce);
        this.acker = new BatchAcker(db, sql, config.schema(), config.ackBatchSize(), config.ackFlushIdle(),
                config.connectionTimeout(), announcer::announce);
        this.acker.start();
        observer.started(this);
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

    /**
     * A pool (the first or a renewed one) reporting to the metrics' tracker, when there is one: a running HikariCP
     * pool takes its tracker once.
     */
    private static HikariDataSource withMetrics(HikariDataSource pool, MetricsTrackerFactory poolMetrics) {
        if (poolMetrics != null) {
            pool.setMetricsTrackerFactory(poolMetrics);
        }
        return pool;
    }

    /** @param livenessLock whether the listener's sessions hold a liveness lock (hand-over across processes) */
    private static NotificationListener listener(PostgresProviderConfig config, boolean livenessLock) {
        String url = withCredentials(config.effectiveListenerUrl(), config.username(), config.password());
        return config.listenerDriver() == PostgresProviderConfig.ListenerDriver.PGJDBC
                ? new PgjdbcListener(url, PgjdbcListener.DEFAULT_CONNECT_TIMEOUT, livenessLock)
                : new PgjdbcNgListener(url, PgjdbcNgListener.DEFAULT_CONNECT_TIMEOUT, livenessLock);
    }

    /** Credentials configured beside the URL travel inside it for the listener's own connection. */
    private static String withCredentials(String url, String user, String password) {
        StringBuilder sb = new StringBuilder(url);
        char sep = url.contains("?") ? '&' : '?';
        if (user != null && !url.contains("user=")) {
            sb.append(sep).append("user=").append(URLEncoder.encode(user, StandardCharsets.UTF_8));
            sep = '&';
        }
        if (password != null && !url.contains("password=")) {
            sb.append(sep).append("password=").append(URLEncoder.encode(password, StandardCharsets.UTF_8));
        }
        return sb.toString();
    }

    /** Connects, migrates or verifies the schema according to the configuration, and returns a ready provider. */
    public static PostgresProvider create(PostgresProviderConfig config) {
        return new PostgresProvider(config);
    }

    /**
     * Migrations hold one connection for the advisory lock while Flyway works on others, so they do not borrow from
     * the provider's pool (a pool of one would deadlock); with a URL they open short-lived connections of their own.
     * The lock is a session lock and Flyway sets {@code search_path}, so behind a transaction pooler they must reach
     * the server directly: {@code directUrl}, whenever it is set.
     */
    private static DataSource migrationSource(PostgresProviderConfig config) {
        if (config.directUrl() != null) {
            PGSimpleDataSource direct = new PGSimpleDataSource();
            direct.setURL(withCredentials(config.directUrl(), config.username(), config.password()));
            direct.setApplicationName("pgdurable-migrate");
            return direct;
        }
        if (config.dataSource() != null) {
            return config.dataSource();
        }
        return unpooledSource(config, "pgdurable-migrate");
    }

    /**
     * The pool's "is the server back?" connection (see {@link RenewingPool}): it goes where the pool's connections go
     * ({@code jdbcUrl}, through a pooler if there is one) and answers or fails within seconds.
     */
    private static DataSource probeSource(PostgresProviderConfig config) {
        PGSimpleDataSource probe = unpooledSource(config, "pgdurable-probe");
        probe.setConnectTimeout(2);
        probe.setLoginTimeout(2);
        return probe;
    }

    /** One connection at a time to {@code jdbcUrl}, outside the pool, named {@code applicationName}. */
    private static PGSimpleDataSource unpooledSource(PostgresProviderConfig config, String applicationName) {
        PGSimpleDataSource direct = new PGSimpleDataSource();
        direct.setURL(config.jdbcUrl());
        if (config.username() != null) {
            direct.setUser(config.username());
        }
        if (config.password() != null) {
            direct.setPassword(config.password());
        }
        direct.setApplicationName(applicationName);
        return direct;
    }

    /**
     * A DataSource we do not own cannot be reconfigured, so behind a transaction pooler its connections must already
     * prepare nothing on the server; otherwise the first busy minute fails with "prepared statement S_n already
     * exists". Only pgjdbc connections can be asked; others are taken on trust (docs/pgbouncer.md).
     */
    private static void checkNoServerPrepares(DataSource dataSource) {
        try (Connection c = dataSource.getConnection()) {
            if (c.isWrapperFor(PGConnection.class)) {
                int threshold = c.unwrap(PGConnection.class).getPrepareThreshold();
                if (threshold != 0) {
                    throw ProviderException.permanent("connect", "transactionPooler is on, but the DataSource's "
                            + "connections prepare statements on the server (pgjdbc prepareThreshold=" + threshold
                            + "); set prepareThreshold=0 on the DataSource (a URL parameter or a data source "
                            + "property), see docs/pgbouncer.md");
                }
            } else {
                LOG.info("pgdurable: transactionPooler is on and the DataSource's connections are not pgjdbc's; "
                        + "make sure they prepare no statement on the server (docs/pgbouncer.md)");
            }
        } catch (SQLException e) {
            throw SqlErrors.translate("connect", e);
        }
    }

    /**
     * The pool a provider opens for {@code config} when it is given no data source. Public so that tools working
     * beside a provider (the CLI's schema commands) connect the same way and report a failure the same way: a
     * {@link ProviderException} naming the URL (password masked) and the driver's reason, permanent for a refused
     * login or a missing database, retryable when the server does not answer. The caller closes the pool.
     */
    public static HikariDataSource openPool(PostgresProviderConfig config) {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(config.jdbcUrl());
        if (config.username() != null) {
            hc.setUsername(config.username());
        }
        if (config.password() != null) {
            hc.setPassword(config.password());
        }
        hc.setPoolName("pgdurable-" + config.schema());
        hc.setMaximumPoolSize(config.poolSize());
        hc.setMinimumIdle(Math.min(2, config.poolSize()));
        hc.setConnectionTimeout(Math.max(250, config.connectionTimeout().toMillis()));
        hc.setAutoCommit(true);
        hc.addDataSourceProperty("ApplicationName", "pgdurable");
        if (config.transactionPooler()) {
            // A named server-side statement lives in the server session, which a transaction pooler hands to other
            // clients after every transaction: unnamed statements only. Assuming a 9.0+ server puts
            // extra_float_digits and application_name in the startup packet instead of session SETs that would stay
            // behind on whichever server connection ran them.
            hc.addDataSourceProperty("prepareThreshold", "0");
            hc.addDataSourceProperty("assumeMinServerVersion", "9.0");
        }
        try {
            return new HikariDataSource(hc);
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            // A refused connection (a missing database, failed authentication) stays refused however often it is
            // tried: classified like any other database error. Anything else (no answer at all) may pass.
            SQLException sql = cause instanceof SQLException s ? s : null;
            String state = sql == null ? null : sql.getSQLState();
            throw new ProviderException("connect", "cannot open a connection pool to "
                    + PostgresProviderConfig.redactUrl(config.jdbcUrl()) + ": " + SqlErrors.connectFailure(cause),
                    sql == null || SqlErrors.isRetryable(sql, state), state, e);
        }
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
        String op = "fetchOrchestrationItem";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Long minVersion = null;
        Long maxVersion = null;
        if (filter != null) {
            if (filter.supportedVersions().isEmpty()) {
                return Optional.empty(); // supports no version at all
            }
            SemverRange range = filter.supportedVersions().get(0);
            minVersion = range.min().packed();
            maxVersion = range.max().packed();
        }
        Long min = minVersion;
        Long max = maxVersion;
        LongPoller.Claim<FetchedOrchestration> claim = visibleBy -> {
            long now = clock.millis();
            Optional<FetchedOrchestration> got = orchestrations.claim(op, now, Math.max(now, visibleBy), lockMs, min,
                    max);
            if (got.isPresent()) {
                writes.turnStarted(got.get().item().instance(), got.get().lockToken(), now + lockMs, now);
                announcer.announce(Announcements.orchestrationLease(now + lockMs), now);
            }
            return got;
        };
        return longPoller == null ? claim.attempt(LongPoller.Claim.NOW)
                : longPoller.fetchClaimingAhead(QueueKind.ORCHESTRATOR, Route.ORCHESTRATOR, Arrays.asList(min, max),
                        new HandOver.OrchestrationTaker(lockMs, min, max), pollTimeout, op, claim);
    }

    @Override
    public void ackOrchestrationItem(String lockToken, long executionId, List<Event> historyDelta,
                                     List<WorkItem> workerItems, List<WorkItem> orchestratorItems,
                                     ExecutionMetadata metadata,
                                     List<ScheduledActivityIdentifier> cancelledActivities) {
        Payloads.notNull(TurnEncoder.OP, "lockToken", lockToken);
        TurnEncoder turn = new TurnEncoder(payloads, clock.millis(), executionId, historyDelta, workerItems,
                orchestratorItems, metadata, cancelledActivities);
        writes.ackTurn(lockToken, turn);
    }

    @Override
    public void abandonOrchestrationItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        long now;
        try {
            now = leases.abandonOrchestrationItem(lockToken, delay, ignoreAttempt);
        } catch (RuntimeException e) {
            announcements.turnEnded(lockToken, clock.millis());
            throw e;
        }
        announcements.turnEnded(lockToken, now);
    }

    @Override
    public void renewOrchestrationItemLock(String lockToken, Duration extendFor) {
        writes.turnRenewed(lockToken, leases.renewOrchestrationItemLock(lockToken, extendFor));
    }

    @Override
    public void enqueueForOrchestrator(WorkItem item, Duration delay) {
        String op = "enqueueForOrchestrator";
        String json = payloads.encode(op, "item", item);
        if (item instanceof WorkItem.ActivityExecute) {
            throw ProviderException.permanent(op, "ActivityExecute belongs on the worker queue; use enqueueForWorker");
        }
        long delayMs = Payloads.delayMillis(op, delay);
        long now = clock.millis();
        long visibleAt = now + delayMs;
        if (item instanceof WorkItem.TimerFired t && t.fireAtMs() > 0) {
            visibleAt = Math.max(t.fireAtMs(), visibleAt);
        }
        long visible = visibleAt;
        writes.writeMessage(new WritePath.MessageWrite(op, sql.enqueueOrchestratorItem,
                sql.enqueueOrchestratorItemNotifying, sql.enqueueOrchestratorItemClaiming, ps -> {
                    ps.setString(1, item.instance());
                    ps.setString(2, item.kind());
                    ps.setString(3, json);
                    ps.setLong(4, visible);
                    ps.setLong(5, now);
                }, item.instance(), visible, now));
    }

    // ------------------------------------------------------------------------------------------ history

    @Override
    public List<Event> read(String instance) {
        return readHistory("read", instance, null);
    }

    @Override
    public List<Event> readWithExecution(String instance, long executionId) {
        return readHistory("readWithExecution", instance, executionId);
    }

    List<Event> readHistory(String op, String instance, Long executionId) {
        Payloads.notNull(op, "instance", instance);
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.readHistory)) {
                ps.setString(1, instance);
                setLongOrNull(ps, 2, executionId);
                List<Event> events = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        long id = rs.getLong(1);
                        String data = rs.getString(3);
                        try {
                            Json.parseObject(data);
                        } catch (IllegalArgumentException bad) {
                            throw ProviderException.permanent(op, "history event " + id + " of instance '" + instance
                                    + "' cannot be decoded: " + bad.getMessage());
                        }
                        events.add(new Event(id, rs.getString(2), data));
                    }
                }
                return events;
            }
        });
    }

    @Override
    public void appendWithExecution(String instance, long executionId, List<Event> newEvents) {
        String op = "appendWithExecution";
        Payloads.notNull(op, "instance", instance);
        Payloads.notNull(op, "newEvents", newEvents);
        if (newEvents.isEmpty()) {
            return;
        }
        int n = newEvents.size();
        Long[] ids = new Long[n];
        String[] types = new String[n];
        String[] data = new String[n];
        for (int i = 0; i < n; i++) {
            Event e = newEvents.get(i);
            payloads.checkEvent(op, i, e);
            ids[i] = e.eventId();
            types[i] = e.type();
            data[i] = e.data();
        }
        long now = clock.millis();
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.appendHistory)) {
                ps.setString(1, instance);
                ps.setLong(2, executionId);
                ps.setLong(3, now);
                ps.setArray(4, c.createArrayOf("bigint", ids));
                ps.setArray(5, c.createArrayOf("text", types));
                ps.setArray(6, c.createArrayOf("text", data));
                ps.execute();
                return null;
            }
        });
    }

    // ------------------------------------------------------------------------------------------ worker queue

    @Override
    public void enqueueForWorker(WorkItem item) {
        String op = "enqueueForWorker";
        String json = payloads.encode(op, "item", item);
        if (!(item instanceof WorkItem.ActivityExecute a)) {
            throw ProviderException.permanent(op, item.kind() + " belongs on the orchestrator queue; only "
                    + "ActivityExecute goes to the worker queue");
        }
        writes.enqueueForWorker(op, json, clock.millis(), a);
    }

    // ------------------------------------------------------------------------------------------ batched enqueue

    /**
     * Enqueues activities in chunks of at most {@code enqueueChunkItems} items and {@code enqueueChunkBytes} bytes,
     * one statement (one transaction) per chunk, in list order. Every item is validated before anything is stored.
     */
    @Override
    public void enqueueAllForWorker(List<WorkItem> items) {
        batchEnqueuer.enqueueAllForWorker(items);
    }

    /**
     * Enqueues orchestrator messages in chunks like {@link #enqueueAllForWorker(List)}; each item becomes visible as
     * with {@link #enqueueForOrchestrator(WorkItem, Duration)} (the same delay for all, a timer never before its
     * fire time).
     */
    @Override
    public void enqueueAllForOrchestrator(List<WorkItem> items, Duration delay) {
        batchEnqueuer.enqueueAllForOrchestrator(items, delay);
    }

    // ------------------------------------------------------------------------------------------ worker fetch and ack

    @Override
    public Optional<FetchedWorkItem> fetchWorkItem(Duration lockTimeout, Duration pollTimeout,
                                                   SessionFetchConfig session, TagFilter tagFilter) {
        String op = "fetchWorkItem";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None) {
            return Optional.empty();
        }
        WorkerClaim request = WorkerClaim.of(lockMs, session, tagFilter);
        Supplier<Optional<FetchedWorkItem>> claim = () -> claimWorkItem(op, request);
        return longPoller == null ? claim.get()
                : longPoller.fetch(QueueKind.WORKER, Route.worker(tagFilter, session != null),
                        Arrays.asList(tagFilter, session == null ? null : session.ownerId()),
                        HandOver.takerFor(request, tagFilter), pollTimeout, op, claim);
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
        return batchFetcher.fetchWorkItems(lockTimeout, batch, session, tagFilter);
    }

    private Optional<FetchedWorkItem> claimWorkItem(String op, WorkerClaim request) {
        String token = SqlRunner.newToken();
        long now = clock.millis();
        Optional<FetchedWorkItem> claimed = call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchWorkItem)) {
                request.bind(c, ps, now, token);
                return readClaimed(op, ps, token, true);
            }
        });
        claimed.ifPresent(got -> announcer.announce(request.leaseHints(now, List.of(got.item())), now));
        return claimed;
    }

    /**
     * The item a claim returned, if any. An item that cannot be decoded is released (its attempt counted) and, with
     * {@code throwUndecodable}, reported as a permanent error; otherwise left for the next plain fetch to report.
     */
    private Optional<FetchedWorkItem> readClaimed(String op, PreparedStatement ps, String token,
                                                  boolean throwUndecodable) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
                return Optional.empty();
            }
            String text = rs.getString(1);
            int attempts = rs.getInt(2);
            try {
                return Optional.of(new FetchedWorkItem(WorkItem.fromJson(text), token, attempts));
            } catch (IllegalArgumentException bad) {
                leases.releaseUndecodableWorkItem(token);
                if (!throwUndecodable) {
                    LOG.warn("pgdurable: {}: the next worker queue item cannot be decoded ({}); released, the next "
                            + "fetch reports it", op, bad.getMessage());
                    return Optional.empty();
                }
                throw ProviderException.permanent(op, "a worker queue item cannot be decoded: " + bad.getMessage());
            }
        }
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
        String op = "ackWorkItemAndFetchNext";
        Payloads.notNull(op, "lockToken", lockToken);
        String completionJson = completionJson(op, completion);
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None) {
            ackWorkItem(lockToken, completion);
            return Optional.empty();
        }
        WorkerClaim request = WorkerClaim.of(lockMs, session, tagFilter);
        String token = SqlRunner.newToken();
        long now = clock.millis();
        Optional<FetchedWorkItem> next = call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.ackAndFetchWorkItem)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setString(3, completion == null ? null : completion.instance());
                ps.setString(4, completion == null ? null : completion.kind());
                ps.setString(5, completionJson);
                request.bindLease(c, ps, 6, token);
                return readClaimed(op, ps, token, false);
            }
        });
        if (completion != null) {
            announcements.messageCommitted(completion.instance(), now, now, false);
        }
        next.ifPresent(got -> announcer.announce(request.leaseHints(now, List.of(got.item())), now));
        return next;
    }

    /**
     * All acks in one {@code ack_work_items} call per {@value BatchAcker#MAX_ACKS_PER_CALL}, on the caller's thread
     * (no hand-off to the group-commit flusher, whatever {@code ackBatchSize} says). Every argument is checked before
     * anything is sent.
     */
    @Override
    public List<AckResult> ackWorkItems(List<WorkAck> acks) {
        String op = "ackWorkItems";
        Payloads.notNull(op, "acks", acks);
        if (acks.isEmpty()) {
            return List.of();
        }
        long now = clock.millis();
        List<WorkCompleter.Ack> batch = new ArrayList<>(acks.size());
        for (int i = 0; i < acks.size(); i++) {
            WorkAck a = acks.get(i);
            if (a == null || a.lockToken() == null) {
                throw ProviderException.permanent(op, "ack " + i + " has no lock token");
            }
            WorkItem completion = a.completion();
            String json = completionJson(op, "ack " + i + " completion", completion);
            batch.add(new WorkCompleter.Ack(a.lockToken(), now, completion == null ? null : completion.instance(),
                    completion == null ? null : completion.kind(), json));
        }
        ProviderException[] outcomes = acker.ackAll(op, batch);
        List<AckResult> results = new ArrayList<>(acks.size());
        for (int i = 0; i < outcomes.length; i++) {
            results.add(new AckResult(acks.get(i).lockToken(), outcomes[i]));
        }
        return results;
    }

    /** The completion's JSON, or null without one; only activity outcomes may complete a worker item. */
    private String completionJson(String op, WorkItem completion) {
        return completionJson(op, "completion", completion);
    }

    private String completionJson(String op, String what, WorkItem completion) {
        if (completion == null) {
            return null;
        }
        if (!(completion instanceof WorkItem.ActivityCompleted || completion instanceof WorkItem.ActivityFailed)) {
            throw ProviderException.permanent(op, what + " must be ActivityCompleted or ActivityFailed, was "
                    + completion.kind());
        }
        return payloads.encode(op, what, completion);
    }

    @Override
    public void ackWorkItem(String lockToken, WorkItem completion) {
        String op = "ackWorkItem";
        Payloads.notNull(op, "lockToken", lockToken);
        String completionJson = completionJson(op, completion);
        long now = clock.millis();
        String instance = completion == null ? null : completion.instance();
        String kind = completion == null ? null : completion.kind();
        if (acker.grouping()) {
            acker.ack(new WorkCompleter.Ack(lockToken, now, instance, kind, completionJson));
            return;
        }
        WritePath.Binder ack = ps -> {
            ps.setString(1, lockToken);
            ps.setLong(2, now);
            ps.setString(3, instance);
            ps.setString(4, kind);
            ps.setString(5, completionJson);
        };
        if (completion != null) {
            writes.writeMessage(new WritePath.MessageWrite(op, sql.ackWorkItem, sql.ackWorkItemNotifying,
                    sql.ackWorkItemClaiming, ack, instance, now, now));
            return;
        }
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.ackWorkItem)) {
                ack.bind(ps);
                ps.execute();
                return null;
            }
        });
    }

    /** Acks handed to the batched-ack flusher and not yet answered; always 0 with {@code ackBatchSize} 1. */
    public int pendingAcks() {
        return acker.pending();
    }

    @Override
    public void renewWorkItemLock(String lockToken, Duration extendFor) {
        leases.renewWorkItemLock(lockToken, extendFor);
    }

    @Override
    public void abandonWorkItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        leases.abandonWorkItem(lockToken, delay, ignoreAttempt);
    }

    // ------------------------------------------------------------------------------------------ sessions

    @Override
    public int renewSessionLock(List<String> ownerIds, Duration extendFor, Duration idleTimeout) {
        String op = "renewSessionLock";
        Payloads.notNull(op, "ownerIds", ownerIds);
        long extendMs = Payloads.positiveMillis(op, "extendFor", extendFor);
        long idleMs = Payloads.delayMillis(op, idleTimeout);
        if (ownerIds.isEmpty()) {
            return 0;
        }
        String[] owners = ownerIds.toArray(new String[0]);
        long now = clock.millis();
        int renewed = call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.renewSessionLocks)) {
                ps.setArray(1, c.createArrayOf("text", owners));
                ps.setLong(2, now);
                ps.setLong(3, extendMs);
                ps.setLong(4, idleMs);
                return singleInt(ps);
            }
        });
        if (renewed > 0) {
            announcements.announce(List.of(Announcements.sessionLease(now + extendMs)), now);
        }
        return renewed;
    }

    @Override
    public int cleanupOrphanedSessions(Duration idleTimeout) {
        String op = "cleanupOrphanedSessions";
        long now = clock.millis();
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.cleanupOrphanedSessions)) {
                ps.setLong(1, now);
                return singleInt(ps);
            }
        });
    }

    // ------------------------------------------------------------------------------------------ client reads

    @Override
    public Optional<CustomStatus> getCustomStatus(String instance, long lastSeenVersion) {
        String op = "getCustomStatus";
        Payloads.notNull(op, "instance", instance);
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getCustomStatus)) {
                ps.setString(1, instance);
                ps.setLong(2, lastSeenVersion);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(new CustomStatus(rs.getString(1), rs.getLong(2)))
                            : Optional.empty();
                }
            }
        });
    }

    @Override
    public Optional<String> getKvValue(String instance, String key) {
        String op = "getKvValue";
        Payloads.notNull(op, "key", key);
        Map<String, String> values = kvValues(op, instance, key);
        return Optional.ofNullable(values.get(key));
    }

    @Override
    public Map<String, String> getKvAllValues(String instance) {
        return kvValues("getKvAllValues", instance, null);
    }

    private Map<String, String> kvValues(String op, String instance, String key) {
        Payloads.notNull(op, "instance", instance);
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getKvValues)) {
                ps.setString(1, instance);
                ps.setString(2, key);
                Map<String, String> values = new LinkedHashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        values.put(rs.getString(1), rs.getString(2));
                    }
                }
                return values;
            }
        });
    }

    @Override
    public Optional<SystemStats> getInstanceStats(String instance) {
        String op = "getInstanceStats";
        Payloads.notNull(op, "instance", instance);
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getInstanceStats)) {
                ps.setString(1, instance);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    return Optional.of(new SystemStats(rs.getLong(1), rs.getLong(2),
                            carriedEventCount(rs.getString(3)), rs.getLong(4), rs.getLong(5)));
                }
            }
        });
    }

    private static long carriedEventCount(String startedEvent) {
        if (startedEvent == null) {
            return 0;
        }
        try {
            Object carried = Json.parseObject(startedEvent).get("carry_forward_events");
            return carried instanceof List<?> list ? list.size() : 0;
        } catch (IllegalArgumentException undecodable) {
            return 0;
        }
    }

    @Override
    public Optional<ProviderAdmin> asManagementCapability() {
        return Optional.of(admin);
    }

    @Override
    public void close() {
        if (!db.markClosed()) {
            return;
        }
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
            call("health", c -> {
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

    /** Announcements waiting for the announcer's thread to send them to other processes (a backlog gauge). */
    public int pendingAnnouncements() {
        return announcer.pending();
    }

    /** The provider's own pool, or null when the application gave a DataSource (tests read its renewals). */
    RenewingPool ownedPool() {
        return ownedPool;
    }

    /** The long-poll machinery when long polling is on (tests and the benchmark read its figures). */
    public Optional<LongPoller> longPoller() {
        return Optional.ofNullable(longPoller);
    }

    // ------------------------------------------------------------------------------------------ plumbing

    /** The management facet runs its operations through the provider's runner (closed check, error mapping). */
    <T> T call(String op, SqlRunner.SqlWork<T> work) {
        return db.call(op, work);
    }
}
