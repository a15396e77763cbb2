package io.pgdurable.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.internal.Json;
import io.pgdurable.spi.BatchEnqueueException;
import io.pgdurable.spi.CustomStatus;
import io.pgdurable.spi.DispatcherCapabilityFilter;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.KvEntry;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.SemverRange;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.SystemStats;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import javax.sql.DataSource;
import io.pgdurable.longpoll.LongPoller;
import io.pgdurable.longpoll.NotificationListener;
import io.pgdurable.longpoll.NotifyChannel;
import io.pgdurable.longpoll.PgjdbcListener;
import io.pgdurable.longpoll.PgjdbcNgListener;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.Route;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL provider: one schema per task hub, one function call per operation, the application clock passed
 * into every lease and visibility decision. It never sleeps or waits for work; a fetch with a poll timeout returns
 * at once in short-poll mode. The one exception is a batched fetch ({@link #fetchWorkItems}) asked to wait for a
 * minimum of items: in short-poll mode it repeats its claim every {@value #BATCH_POLL_PAUSE_MS} ms within its
 * {@code maxWait}.
 *
 * <p>Batching (docs/batching.md): {@link #fetchWorkItems} claims many worker items in one call;
 * {@link #enqueueAllForWorker} and {@link #enqueueAllForOrchestrator} store lists in chunks of one statement each;
 * with {@code ackBatchSize} above 1, terminal acks are flushed together by one background thread.
 */
public final class PostgresProvider implements OrchestrationProvider {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresProvider.class);
    private static final String VERSION = "0.1.0";

    private final PostgresProviderConfig config;
    private final DataSource dataSource;
    private final HikariDataSource ownedPool;
    private final Statements sql;
    private final Clock clock;
    private final Payloads payloads;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final PostgresAdmin admin;
    private final LongPoller longPoller;
    /** Batched terminal acks; null with {@code ackBatchSize} 1 (every ack is its own call). */
    private final WorkCompleter completer;

    /** Pause between claim attempts of a batched fetch waiting for its minimum in short-poll mode. */
    static final long BATCH_POLL_PAUSE_MS = 50;
    /** Client-side cancel of a batched ack flush that hangs (pgjdbc query timeout, whole seconds). */
    private static final int ACK_FLUSH_TIMEOUT_SECONDS = 30;

    private PostgresProvider(PostgresProviderConfig config) {
        this.config = config;
        this.clock = config.clock();
        this.payloads = new Payloads(config.maxPayloadBytes());
        this.sql = new Statements(config.schema());
        this.admin = new PostgresAdmin(this, sql, clock);
        if (config.dataSource() != null) {
            this.dataSource = config.dataSource();
            this.ownedPool = null;
        } else {
            this.ownedPool = openPool(config);
            this.dataSource = ownedPool;
        }
        LongPoller poller = null;
        try {
            SchemaMigrator migrator = new SchemaMigrator(migrationSource(config), config);
            if (config.migrationPolicy() == MigrationPolicy.APPLY_ALL) {
                migrator.applyAll();
                if (config.longPolling() && !migrator.activated()) {
                    migrator.activate();
                }
            } else {
                migrator.verify();
                if (config.longPolling() && !migrator.activated()) {
                    throw ProviderException.permanent("verify", "long polling is on but schema '" + config.schema()
                            + "' was never activated (its notify triggers are disabled) and VERIFY_ONLY runs no "
                            + "DDL; run `pgdurable activate` or start one provider with APPLY_ALL and long polling");
                }
            }
            if (config.longPolling()) {
                poller = new LongPoller(new LongPoller.Settings(config.fallbackPollInterval(),
                        config.wakeCoalescing(), config.recoveryScanInterval(), config.maxParkedWaiters(),
                        config.heartbeatInterval(), config.maxTrackedDeadlines()), clock,
                        new PostgresWorkScanner(dataSource, sql, config.timerScanTimeout()), listener(config),
                        NotifyChannel.forSchema(config.schema()), config.longPollSignals());
                poller.start();
            }
        } catch (RuntimeException e) {
            if (poller != null) {
                poller.close();
            }
            closed.set(true);
            if (ownedPool != null) {
                ownedPool.close();
            }
            throw e;
        }
        this.longPoller = poller;
        if (config.ackBatchSize() > 1) {
            this.completer = new WorkCompleter("pgdurable-acks-" + config.schema(), "ackWorkItem",
                    config.ackBatchSize(), config.ackFlushIdle(), this::flushAcks);
            this.completer.start();
        } else {
            this.completer = null;
        }
    }

    private static NotificationListener listener(PostgresProviderConfig config) {
        String url = withCredentials(config.effectiveListenerUrl(), config.username(), config.password());
        return config.listenerDriver() == PostgresProviderConfig.ListenerDriver.PGJDBC
                ? new PgjdbcListener(url) : new PgjdbcNgListener(url);
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
     */
    private static DataSource migrationSource(PostgresProviderConfig config) {
        if (config.dataSource() != null) {
            return config.dataSource();
        }
        PGSimpleDataSource direct = new PGSimpleDataSource();
        direct.setURL(config.jdbcUrl());
        if (config.username() != null) {
            direct.setUser(config.username());
        }
        if (config.password() != null) {
            direct.setPassword(config.password());
        }
        direct.setApplicationName("pgdurable-migrate");
        return direct;
    }

    private static HikariDataSource openPool(PostgresProviderConfig config) {
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
        try {
            return new HikariDataSource(hc);
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new ProviderException("connect", "cannot open a connection pool to "
                    + PostgresProviderConfig.redactUrl(config.jdbcUrl()) + ": " + cause.getMessage(),
                    true, cause instanceof SQLException s ? s.getSQLState() : null, e);
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
        Supplier<Optional<FetchedOrchestration>> claim = () -> claimOrchestration(op, lockMs, min, max);
        return longPoller == null ? claim.get()
                : longPoller.fetch(QueueKind.ORCHESTRATOR, Route.ORCHESTRATOR, pollTimeout, op, claim);
    }

    private Optional<FetchedOrchestration> claimOrchestration(String op, long lockMs, Long min, Long max) {
        String token = newToken();
        long now = clock.millis();
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchOrchestrationItem)) {
                ps.setLong(1, now);
                ps.setLong(2, lockMs);
                ps.setString(3, token);
                setLongOrNull(ps, 4, min);
                setLongOrNull(ps, 5, max);
                try (ResultSet rs = ps.executeQuery()) {
                    logWarnings(ps.getWarnings());
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    return Optional.of(readOrchestration(rs, token));
                }
            }
        });
    }

    private FetchedOrchestration readOrchestration(ResultSet rs, String token) throws SQLException {
        String instance = rs.getString("instance_id");
        String[] messageTexts = strings(rs.getArray("messages"));
        List<WorkItem> messages = new ArrayList<>(messageTexts.length);
        try {
            for (String text : messageTexts) {
                messages.add(WorkItem.fromJson(text));
            }
        } catch (IllegalArgumentException bad) {
            // A fetch that throws must hold no lock: give the batch back before reporting.
            releaseAfterUndecodableMessages(token);
            throw ProviderException.permanent("fetchOrchestrationItem", "a queued message of instance '" + instance
                    + "' cannot be decoded: " + bad.getMessage());
        }
        boolean hasInstance = rs.getBoolean("has_instance");
        String name = rs.getString("orchestration_name");
        String version = rs.getString("orchestration_version");
        if (!hasInstance) {
            name = "Unknown";
            for (WorkItem m : messages) {
                if (m instanceof WorkItem.StartOrchestration s) {
                    name = s.orchestration();
                    version = s.version();
                    break;
                }
                if (m instanceof WorkItem.ContinueAsNew can) {
                    name = can.orchestration();
                    version = can.version();
                    break;
                }
            }
        }
        long executionId = rs.getLong("execution_id");

        List<Event> history = new ArrayList<>();
        String historyError = null;
        Long[] ids = longs(rs.getArray("event_ids"));
        String[] types = strings(rs.getArray("event_types"));
        String[] data = strings(rs.getArray("event_data"));
        for (int i = 0; i < ids.length; i++) {
            try {
                Json.parseObject(data[i]);
            } catch (IllegalArgumentException bad) {
                historyError = "history event " + ids[i] + " of execution " + executionId + " of instance '"
                        + instance + "' cannot be decoded: " + bad.getMessage();
                history.clear();
                break;
            }
            history.add(new Event(ids[i], types[i], data[i]));
        }

        Map<String, KvEntry> kv = new LinkedHashMap<>();
        String[] keys = strings(rs.getArray("kv_keys"));
        String[] values = strings(rs.getArray("kv_values"));
        Long[] updated = longs(rs.getArray("kv_updated_ms"));
        for (int i = 0; i < keys.length; i++) {
            kv.put(keys[i], new KvEntry(values[i], updated[i]));
        }
        OrchestrationItem item = new OrchestrationItem(instance, name, executionId,
                version == null ? "unknown" : version, history, messages, Optional.ofNullable(historyError), kv);
        return new FetchedOrchestration(item, token, rs.getInt("attempt_count"));
    }

    private void releaseAfterUndecodableMessages(String token) {
        try {
            abandonOrchestrationItem(token, null, false);
        } catch (ProviderException e) {
            LOG.warn("pgdurable: could not release the lock of an undecodable batch; it expires on its own: {}",
                    e.getMessage());
        }
    }

    @Override
    public void ackOrchestrationItem(String lockToken, long executionId, List<Event> historyDelta,
                                     List<WorkItem> workerItems, List<WorkItem> orchestratorItems,
                                     ExecutionMetadata metadata,
                                     List<ScheduledActivityIdentifier> cancelledActivities) {
        String op = TurnEncoder.OP;
        Payloads.notNull(op, "lockToken", lockToken);
        long now = clock.millis();
        TurnEncoder t = new TurnEncoder(payloads, now, executionId, historyDelta, workerItems, orchestratorItems,
                metadata, cancelledActivities);
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.ackOrchestrationItem)) {
                int i = 1;
                ps.setString(i++, lockToken);
                ps.setLong(i++, now);
                ps.setLong(i++, executionId);
                ps.setArray(i++, c.createArrayOf("bigint", t.eventIds));
                ps.setArray(i++, c.createArrayOf("text", t.eventTypes));
                ps.setArray(i++, c.createArrayOf("text", t.eventData));
                ps.setArray(i++, c.createArrayOf("text", t.workerItems));
                ps.setArray(i++, c.createArrayOf("text", t.workerInstances));
                ps.setArray(i++, c.createArrayOf("bigint", t.workerExecutions));
                ps.setArray(i++, c.createArrayOf("bigint", t.workerActivities));
                ps.setArray(i++, c.createArrayOf("text", t.workerSessions));
                ps.setArray(i++, c.createArrayOf("text", t.workerTags));
                ps.setArray(i++, c.createArrayOf("text", t.orchInstances));
                ps.setArray(i++, c.createArrayOf("text", t.orchKinds));
                ps.setArray(i++, c.createArrayOf("text", t.orchItems));
                ps.setArray(i++, c.createArrayOf("bigint", t.orchVisibleAt));
                ps.setString(i++, metadata.status());
                ps.setString(i++, metadata.output());
                ps.setString(i++, metadata.orchestrationName());
                ps.setString(i++, metadata.orchestrationVersion());
                ps.setString(i++, metadata.parentInstanceId());
                setLongOrNull(ps, i++, t.pinnedVersion);
                ps.setInt(i++, t.customStatusAction);
                ps.setString(i++, t.customStatus);
                ps.setArray(i++, c.createArrayOf("text", t.kvOps));
                ps.setArray(i++, c.createArrayOf("text", t.kvKeys));
                ps.setArray(i++, c.createArrayOf("text", t.kvValues));
                ps.setArray(i++, c.createArrayOf("bigint", t.kvUpdatedMs));
                ps.setArray(i++, c.createArrayOf("text", t.cancelInstances));
                ps.setArray(i++, c.createArrayOf("bigint", t.cancelExecutions));
                ps.setArray(i, c.createArrayOf("bigint", t.cancelActivities));
                ps.execute();
                return null;
            }
        });
    }

    @Override
    public void abandonOrchestrationItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        String op = "abandonOrchestrationItem";
        Payloads.notNull(op, "lockToken", lockToken);
        long delayMs = Payloads.delayMillis(op, delay);
        long now = clock.millis();
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.abandonOrchestrationItem)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setLong(3, delayMs);
                ps.setBoolean(4, ignoreAttempt);
                ps.execute();
                return null;
            }
        });
    }

    @Override
    public void renewOrchestrationItemLock(String lockToken, Duration extendFor) {
        String op = "renewOrchestrationItemLock";
        Payloads.notNull(op, "lockToken", lockToken);
        long extendMs = Payloads.positiveMillis(op, "extendFor", extendFor);
        long now = clock.millis();
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.renewOrchestrationItemLock)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setLong(3, extendMs);
                ps.execute();
                return null;
            }
        });
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
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.enqueueOrchestratorItem)) {
                ps.setString(1, item.instance());
                ps.setString(2, item.kind());
                ps.setString(3, json);
                ps.setLong(4, visible);
                ps.setLong(5, now);
                ps.execute();
                return null;
            }
        });
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
        long now = clock.millis();
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.enqueueWorkerItem)) {
                ps.setString(1, json);
                ps.setLong(2, now);
                ps.setString(3, a.instance());
                ps.setLong(4, a.executionId());
                ps.setLong(5, a.id());
                ps.setString(6, a.sessionId());
                ps.setString(7, a.tag());
                ps.execute();
                return null;
            }
        });
    }

    // ------------------------------------------------------------------------------------------ batched enqueue

    /**
     * Enqueues activities in chunks of at most {@code enqueueChunkItems} items and {@code enqueueChunkBytes} bytes,
     * one statement (one transaction) per chunk, in list order. Every item is validated before anything is stored.
     */
    @Override
    public void enqueueAllForWorker(List<WorkItem> items) {
        String op = "enqueueAllForWorker";
        Encoded batch = encodeAll(op, items, true);
        String[] json = batch.json();
        if (json.length == 0) {
            return;
        }
        long now = clock.millis();
        storeInChunks(op, json, (c, from, to) -> {
            int m = to - from;
            String[] instances = new String[m];
            Long[] executions = new Long[m];
            Long[] activities = new Long[m];
            String[] sessions = new String[m];
            String[] tags = new String[m];
            for (int i = 0; i < m; i++) {
                WorkItem.ActivityExecute a = (WorkItem.ActivityExecute) batch.items()[from + i];
                instances[i] = a.instance();
                executions[i] = a.executionId();
                activities[i] = a.id();
                sessions[i] = a.sessionId();
                tags[i] = a.tag();
            }
            try (PreparedStatement ps = c.prepareStatement(sql.enqueueWorkerItems)) {
                ps.setArray(1, c.createArrayOf("text", Arrays.copyOfRange(json, from, to)));
                ps.setLong(2, now);
                ps.setArray(3, c.createArrayOf("text", instances));
                ps.setArray(4, c.createArrayOf("bigint", executions));
                ps.setArray(5, c.createArrayOf("bigint", activities));
                ps.setArray(6, c.createArrayOf("text", sessions));
                ps.setArray(7, c.createArrayOf("text", tags));
                return singleInt(ps);
            }
        });
    }

    /**
     * Enqueues orchestrator messages in chunks like {@link #enqueueAllForWorker(List)}; each item becomes visible as
     * with {@link #enqueueForOrchestrator(WorkItem, Duration)} (the same delay for all, a timer never before its
     * fire time).
     */
    @Override
    public void enqueueAllForOrchestrator(List<WorkItem> items, Duration delay) {
        String op = "enqueueAllForOrchestrator";
        Encoded batch = encodeAll(op, items, false);
        String[] json = batch.json();
        int n = json.length;
        if (n == 0) {
            return;
        }
        long delayMs;
        try {
            delayMs = Payloads.delayMillis(op, delay);
        } catch (ProviderException e) {
            throw new BatchEnqueueException(op, stripOperation(e), false, null, e, n, 0, 0);
        }
        long now = clock.millis();
        storeInChunks(op, json, (c, from, to) -> {
            int m = to - from;
            String[] instances = new String[m];
            String[] kinds = new String[m];
            Long[] visibleAt = new Long[m];
            for (int i = 0; i < m; i++) {
                WorkItem item = batch.items()[from + i];
                instances[i] = item.instance();
                kinds[i] = item.kind();
                long visible = now + delayMs;
                if (item instanceof WorkItem.TimerFired t && t.fireAtMs() > 0) {
                    visible = Math.max(t.fireAtMs(), visible);
                }
                visibleAt[i] = visible;
            }
            try (PreparedStatement ps = c.prepareStatement(sql.enqueueOrchestratorItems)) {
                ps.setArray(1, c.createArrayOf("text", instances));
                ps.setArray(2, c.createArrayOf("text", kinds));
                ps.setArray(3, c.createArrayOf("text", Arrays.copyOfRange(json, from, to)));
                ps.setArray(4, c.createArrayOf("bigint", visibleAt));
                ps.setLong(5, now);
                return singleInt(ps);
            }
        });
    }

    /** A batch to enqueue: the caller's items (a snapshot) and their JSON. */
    private record Encoded(WorkItem[] items, String[] json) {}

    /** Validates and encodes every item before anything is stored; an invalid item fails the batch whole. */
    private Encoded encodeAll(String op, List<WorkItem> items, boolean workerQueue) {
        if (items == null) {
            throw new BatchEnqueueException(op, "items is null", false, null, null, 0, 0, 0);
        }
        WorkItem[] snapshot = items.toArray(new WorkItem[0]);
        int n = snapshot.length;
        String[] json = new String[n];
        for (int i = 0; i < n; i++) {
            WorkItem item = snapshot[i];
            try {
                json[i] = payloads.encode(op, "item #" + i, item);
                if (workerQueue && !(item instanceof WorkItem.ActivityExecute)) {
                    throw ProviderException.permanent(op, "item #" + i + ": " + item.kind() + " belongs on the "
                            + "orchestrator queue; only ActivityExecute goes to the worker queue");
                }
                if (!workerQueue && item instanceof WorkItem.ActivityExecute) {
                    throw ProviderException.permanent(op, "item #" + i + ": ActivityExecute belongs on the worker "
                            + "queue; use enqueueForWorker");
                }
            } catch (ProviderException e) {
                throw new BatchEnqueueException(op, stripOperation(e) + " (nothing was stored)", false, null, e, n,
                        0, 0);
            }
        }
        return new Encoded(snapshot, json);
    }

    private static String stripOperation(ProviderException e) {
        String prefix = e.operation() + ": ";
        String m = e.getMessage();
        return m.startsWith(prefix) ? m.substring(prefix.length()) : m;
    }

    @FunctionalInterface
    private interface ChunkWriter {
        /** Stores items {@code [from, to)} with one statement; returns how many rows it stored. */
        int write(Connection c, int from, int to) throws SQLException;
    }

    /** Chunk boundaries: each chunk holds at least one item and otherwise stays within both bounds. */
    static List<int[]> chunks(String[] json, int maxItems, long maxBytes) {
        List<int[]> out = new ArrayList<>();
        int from = 0;
        long bytes = 0;
        for (int i = 0; i < json.length; i++) {
            long size = Payloads.utf8Length(json[i]);
            if (i > from && (i - from >= maxItems || bytes + size > maxBytes)) {
                out.add(new int[] {from, i});
                from = i;
                bytes = 0;
            }
            bytes += size;
        }
        if (from < json.length) {
            out.add(new int[] {from, json.length});
        }
        return out;
    }

    /**
     * Stores the chunks in order, each in its own transaction. A chunk that fails retryably is retried while the
     * batch's {@code enqueueRetryBudget} lasts (logged once per batch), unless its outcome is unknown (the
     * connection broke mid-statement): re-running it could store it twice. Otherwise the batch stops at the failed
     * chunk and reports what is stored, in doubt and not stored.
     */
    private void storeInChunks(String op, String[] json, ChunkWriter writer) {
        int n = json.length;
        long start = System.nanoTime();
        long budget = config.enqueueRetryBudget().toNanos();
        boolean logged = false;
        List<int[]> chunks = chunks(json, config.enqueueChunkItems(), config.enqueueChunkBytes());
        for (int k = 0; k < chunks.size(); k++) {
            int from = chunks.get(k)[0];
            int to = chunks.get(k)[1];
            long pause = 50;
            while (true) {
                ChunkFailure failure = storeChunk(op, writer, from, to);
                if (failure == null) {
                    break;
                }
                ProviderException cause = failure.error();
                String where = "chunk " + (k + 1) + " of " + chunks.size() + " (items #" + from + "..#" + (to - 1)
                        + ") failed: " + stripOperation(cause);
                long elapsed = System.nanoTime() - start;
                long wait = Math.min(pause, 1000) + ThreadLocalRandom.current().nextLong(Math.max(1, pause / 4));
                boolean retry = cause.retryable() && !failure.inDoubt() && !closed.get()
                        && elapsed + TimeUnit.MILLISECONDS.toNanos(wait) < budget;
                if (retry) {
                    if (!logged) {
                        logged = true;
                        LOG.warn("pgdurable: {} batch of {} item(s): {}; retrying for up to {} in all", op, n, where,
                                config.enqueueRetryBudget());
                    }
                    try {
                        TimeUnit.MILLISECONDS.sleep(wait);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        retry = false;
                    }
                }
                if (!retry) {
                    throw new BatchEnqueueException(op, where, cause.retryable(), cause.sqlState().orElse(null),
                            cause, n, from, failure.inDoubt() ? to - from : 0);
                }
                pause = Math.min(pause * 2, 1000);
            }
        }
    }

    private record ChunkFailure(ProviderException error, boolean inDoubt) {}

    /** Stores one chunk; null on success. */
    private ChunkFailure storeChunk(String op, ChunkWriter writer, int from, int to) {
        if (closed.get()) {
            return new ChunkFailure(ProviderException.permanent(op, "the provider is closed"), false);
        }
        for (int attempt = 1; ; attempt++) {
            Connection c;
            try {
                c = dataSource.getConnection();
            } catch (SQLException e) {
                return new ChunkFailure(SqlErrors.translate(op, e), false); // nothing was sent
            }
            try {
                int stored = writer.write(c, from, to);
                if (stored != to - from) {
                    return new ChunkFailure(ProviderException.permanent(op, "the chunk stored " + stored
                            + " rows instead of " + (to - from)), true);
                }
                return null;
            } catch (SQLException e) {
                if (attempt == 1 && SqlErrors.CACHED_PLAN_CHANGED.equals(e.getSQLState())) {
                    continue; // rolled back: re-running is safe
                }
                String state = e.getSQLState();
                // A broken connection may have lost the reply to a commit: the chunk may or may not be stored.
                boolean inDoubt = state == null || state.startsWith("08");
                return new ChunkFailure(SqlErrors.translate(op, e), inDoubt);
            } catch (RuntimeException e) {
                return new ChunkFailure(new ProviderException(op, "chunk failed: " + e, false, null, e), true);
            } finally {
                try {
                    c.close();
                } catch (SQLException | RuntimeException e) {
                    LOG.debug("pgdurable: returning a connection failed: {}", e.getMessage());
                }
            }
        }
    }

    @Override
    public Optional<FetchedWorkItem> fetchWorkItem(Duration lockTimeout, Duration pollTimeout,
                                                   SessionFetchConfig session, TagFilter tagFilter) {
        String op = "fetchWorkItem";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None) {
            return Optional.empty();
        }
        int mode = tagMode(tagFilter);
        String[] tags = tagList(tagFilter);
        Supplier<Optional<FetchedWorkItem>> claim = () -> claimWorkItem(op, lockMs, session, mode, tags);
        return longPoller == null ? claim.get()
                : longPoller.fetch(QueueKind.WORKER, Route.worker(tagFilter, session != null), pollTimeout, op, claim);
    }

    /** The tag mode of the SQL fetches: 0 untagged only, 1 listed tags, 2 untagged or listed, 3 any. */
    private static int tagMode(TagFilter filter) {
        if (filter instanceof TagFilter.DefaultOnly) {
            return 0;
        } else if (filter instanceof TagFilter.Tags) {
            return 1;
        } else if (filter instanceof TagFilter.DefaultAnd) {
            return 2;
        }
        return 3;
    }

    private static String[] tagList(TagFilter filter) {
        if (filter instanceof TagFilter.Tags t) {
            return t.tags().toArray(new String[0]);
        } else if (filter instanceof TagFilter.DefaultAnd d) {
            return d.tags().toArray(new String[0]);
        }
        return new String[0];
    }

    /**
     * Batched fetch: claim attempts of up to {@code maxItems - held} items (one SQL call each), until at least
     * {@code minItems} are held, the reply is full (count or bytes) or {@code maxWait} ends. With long polling an
     * attempt that finds nothing parks (the long-poll wait), and an empty return ends the fetch; in short-poll mode
     * attempts repeat every {@value #BATCH_POLL_PAUSE_MS} ms within {@code maxWait}.
     */
    @Override
    public List<FetchedWorkItem> fetchWorkItems(Duration lockTimeout, WorkBatch batch, SessionFetchConfig session,
                                                TagFilter tagFilter) {
        String op = "fetchWorkItems";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "batch", batch);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None) {
            return List.of();
        }
        int mode = tagMode(tagFilter);
        String[] tags = tagList(tagFilter);
        Route route = Route.worker(tagFilter, session != null);
        long deadline = System.nanoTime() + batch.maxWait().toNanos();
        List<FetchedWorkItem> out = new ArrayList<>();
        long bytes = 0;
        while (true) {
            int want = batch.maxItems() - out.size();
            long budget = config.fetchBatchMaxBytes() - bytes;
            boolean firstFree = out.isEmpty();
            Supplier<Optional<ClaimedBatch>> claim = () -> {
                ClaimedBatch c = claimWorkItems(op, lockMs, session, mode, tags, want, budget, firstFree);
                return c.items().isEmpty() && !c.full() ? Optional.empty() : Optional.of(c);
            };
            ClaimedBatch got;
            try {
                if (longPoller == null) {
                    got = claim.get().orElse(ClaimedBatch.NONE);
                } else {
                    long remaining = deadline - System.nanoTime();
                    got = longPoller.fetch(QueueKind.WORKER, route,
                            remaining > 0 ? Duration.ofNanos(remaining) : Duration.ZERO, op, claim)
                            .orElse(ClaimedBatch.NONE);
                }
            } catch (ProviderException e) {
                if (out.isEmpty()) {
                    throw e; // holds nothing
                }
                LOG.debug("pgdurable: {} returns the {} item(s) it holds after a failed claim: {}", op, out.size(),
                        e.getMessage());
                return out;
            }
            out.addAll(got.items());
            bytes += got.bytes();
            if (out.size() >= batch.minItems() || out.size() >= batch.maxItems() || got.full()) {
                return out;
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return out;
            }
            if (longPoller != null) {
                if (got.items().isEmpty()) {
                    return out; // the long-poll wait ended (timeout, close or interrupt)
                }
                continue;
            }
            try {
                TimeUnit.NANOSECONDS.sleep(Math.min(remaining, TimeUnit.MILLISECONDS.toNanos(BATCH_POLL_PAUSE_MS)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return out;
            }
        }
    }

    /** One claim attempt of a batched fetch: the decoded items, their bytes, whether the byte bound stopped it. */
    private record ClaimedBatch(List<FetchedWorkItem> items, long bytes, boolean full) {
        static final ClaimedBatch NONE = new ClaimedBatch(List.of(), 0, false);
    }

    private ClaimedBatch claimWorkItems(String op, long lockMs, SessionFetchConfig session, int mode, String[] tags,
                                        int maxItems, long maxBytes, boolean firstFree) {
        String prefix = newToken();
        long now = clock.millis();
        List<String[]> undecodable = new ArrayList<>(); // token, reason
        ClaimedBatch claimed = call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchWorkItems)) {
                ps.setLong(1, now);
                ps.setLong(2, lockMs);
                ps.setString(3, prefix);
                ps.setString(4, session == null ? null : session.ownerId());
                setLongOrNull(ps, 5, session == null ? null : session.lockTimeout().toMillis());
                ps.setInt(6, mode);
                ps.setArray(7, c.createArrayOf("text", tags));
                ps.setInt(8, maxItems);
                ps.setLong(9, Math.max(0, maxBytes));
                ps.setBoolean(10, firstFree);
                List<FetchedWorkItem> items = new ArrayList<>();
                long bytes = 0;
                boolean full = false;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        String token = rs.getString(1);
                        if (token == null) {
                            full = true; // the marker row: the byte bound stopped the claim
                            continue;
                        }
                        String text = rs.getString(2);
                        bytes += Payloads.utf8Length(text);
                        try {
                            items.add(new FetchedWorkItem(WorkItem.fromJson(text), token, rs.getInt(3)));
                        } catch (IllegalArgumentException bad) {
                            undecodable.add(new String[] {token, bad.getMessage()});
                        }
                    }
                }
                return new ClaimedBatch(items, bytes, full);
            }
        });
        if (!undecodable.isEmpty()) {
            // A fetch hands out only what it can decode: the others are released (their attempt counted).
            for (String[] bad : undecodable) {
                abandonQuietly(bad[0]);
            }
            String what = undecodable.size() + " worker queue item(s) cannot be decoded and were released: "
                    + undecodable.get(0)[1];
            if (claimed.items().isEmpty()) {
                throw ProviderException.permanent(op, what);
            }
            LOG.warn("pgdurable: {}: {}", op, what);
        }
        return claimed;
    }

    private Optional<FetchedWorkItem> claimWorkItem(String op, long lockMs, SessionFetchConfig session, int mode,
                                                    String[] tags) {
        String token = newToken();
        long now = clock.millis();
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchWorkItem)) {
                ps.setLong(1, now);
                ps.setLong(2, lockMs);
                ps.setString(3, token);
                ps.setString(4, session == null ? null : session.ownerId());
                setLongOrNull(ps, 5, session == null ? null : session.lockTimeout().toMillis());
                ps.setInt(6, mode);
                ps.setArray(7, c.createArrayOf("text", tags));
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    String text = rs.getString(1);
                    int attempts = rs.getInt(2);
                    WorkItem item;
                    try {
                        item = WorkItem.fromJson(text);
                    } catch (IllegalArgumentException bad) {
                        abandonQuietly(token);
                        throw ProviderException.permanent(op, "a worker queue item cannot be decoded: "
                                + bad.getMessage());
                    }
                    return Optional.of(new FetchedWorkItem(item, token, attempts));
                }
            }
        });
    }

    private void abandonQuietly(String token) {
        try {
            abandonWorkItem(token, null, false);
        } catch (ProviderException e) {
            LOG.warn("pgdurable: could not release an undecodable work item; its lease expires on its own: {}",
                    e.getMessage());
        }
    }

    @Override
    public void ackWorkItem(String lockToken, WorkItem completion) {
        String op = "ackWorkItem";
        Payloads.notNull(op, "lockToken", lockToken);
        String json = null;
        if (completion != null) {
            if (!(completion instanceof WorkItem.ActivityCompleted || completion instanceof WorkItem.ActivityFailed)) {
                throw ProviderException.permanent(op, "completion must be ActivityCompleted or ActivityFailed, was "
                        + completion.kind());
            }
            json = payloads.encode(op, "completion", completion);
        }
        String completionJson = json;
        long now = clock.millis();
        if (completer != null) {
            if (closed.get()) {
                throw ProviderException.permanent(op, "the provider is closed");
            }
            WorkCompleter.await(op, completer.submit(new WorkCompleter.Ack(lockToken, now,
                    completion == null ? null : completion.instance(), completion == null ? null : completion.kind(),
                    completionJson)), ackWaitBound());
            return;
        }
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.ackWorkItem)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setString(3, completion == null ? null : completion.instance());
                ps.setString(4, completion == null ? null : completion.kind());
                ps.setString(5, completionJson);
                ps.execute();
                return null;
            }
        });
    }

    /**
     * How long an {@code ackWorkItem} waits for its batched flush at most: a safety net above the real bounds (the
     * flush ahead of it and its own, each at most the pool wait plus the flush's query timeout, plus the idle
     * window of every ack that can join before it).
     */
    private Duration ackWaitBound() {
        return config.connectionTimeout().multipliedBy(2)
                .plusSeconds(2L * ACK_FLUSH_TIMEOUT_SECONDS + 5)
                .plus(config.ackFlushIdle().multipliedBy(config.ackBatchSize()));
    }

    /**
     * One batched flush: {@code ack_work_items} deletes the batch with one {@code DELETE ... RETURNING} (the lease
     * check per item), enqueues the completions and marks sessions active. A deadlock or serialization failure is
     * re-run once (the call rolled back as a whole).
     */
    private ProviderException[] flushAcks(List<WorkCompleter.Ack> acks) {
        String op = "ackWorkItem";
        int n = acks.size();
        String[] tokens = new String[n];
        Long[] nows = new Long[n];
        String[] instances = new String[n];
        String[] kinds = new String[n];
        String[] completions = new String[n];
        for (int i = 0; i < n; i++) {
            WorkCompleter.Ack a = acks.get(i);
            tokens[i] = a.token();
            nows[i] = a.nowMs();
            instances[i] = a.instance();
            kinds[i] = a.kind();
            completions[i] = a.completionJson();
        }
        SqlWork<ProviderException[]> work = c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.ackWorkItems)) {
                ps.setQueryTimeout(ACK_FLUSH_TIMEOUT_SECONDS);
                ps.setArray(1, c.createArrayOf("text", tokens));
                ps.setArray(2, c.createArrayOf("bigint", nows));
                ps.setArray(3, c.createArrayOf("text", instances));
                ps.setArray(4, c.createArrayOf("text", kinds));
                ps.setArray(5, c.createArrayOf("text", completions));
                ProviderException[] outcomes = new ProviderException[n];
                boolean[] answered = new boolean[n];
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        int pos = rs.getInt(1) - 1;
                        answered[pos] = true;
                        if (rs.getBoolean(2)) {
                            continue;
                        }
                        long expiredMs = rs.getLong(3);
                        String why = rs.wasNull()
                                ? "Invalid lock token: worker queue item not found (unknown token, already acked, or "
                                        + "cancelled)"
                                : "Invalid lock token: the work item lease expired " + expiredMs + " ms ago";
                        outcomes[pos] = new ProviderException(op, why, false, "PD001", null);
                    }
                }
                for (int i = 0; i < n; i++) {
                    if (!answered[i]) {
                        throw ProviderException.permanent(op, "ack_work_items gave no answer for position " + (i + 1));
                    }
                }
                return outcomes;
            }
        };
        try {
            return run(op, work);
        } catch (ProviderException e) {
            String state = e.sqlState().orElse("");
            if (state.equals("40P01") || state.equals("40001")) {
                LOG.debug("pgdurable: batched ack flush re-run after {}", e.getMessage());
                return run(op, work);
            }
            throw e;
        }
    }

    /** Acks handed to the batched-ack flusher and not yet answered; always 0 with {@code ackBatchSize} 1. */
    public int pendingAcks() {
        return completer == null ? 0 : completer.pending();
    }

    @Override
    public void renewWorkItemLock(String lockToken, Duration extendFor) {
        String op = "renewWorkItemLock";
        Payloads.notNull(op, "lockToken", lockToken);
        long extendMs = Payloads.positiveMillis(op, "extendFor", extendFor);
        long now = clock.millis();
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.renewWorkItemLock)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setLong(3, extendMs);
                ps.execute();
                return null;
            }
        });
    }

    @Override
    public void abandonWorkItem(String lockToken, Duration delay, boolean ignoreAttempt) {
        String op = "abandonWorkItem";
        Payloads.notNull(op, "lockToken", lockToken);
        long delayMs = Payloads.delayMillis(op, delay);
        long now = clock.millis();
        call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.abandonWorkItem)) {
                ps.setString(1, lockToken);
                ps.setLong(2, now);
                ps.setLong(3, delayMs);
                ps.setBoolean(4, ignoreAttempt);
                ps.execute();
                return null;
            }
        });
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
        return call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.renewSessionLocks)) {
                ps.setArray(1, c.createArrayOf("text", owners));
                ps.setLong(2, now);
                ps.setLong(3, extendMs);
                ps.setLong(4, idleMs);
                return singleInt(ps);
            }
        });
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
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (longPoller != null) {
            longPoller.close(); // parked fetches return empty before the pool goes away
        }
        if (completer != null) {
            completer.close(config.ackDrainTimeout()); // flushes buffered acks while the pool is still open
        }
        if (ownedPool != null) {
            ownedPool.close();
        }
    }

    /** The long-poll machinery when long polling is on (tests and the benchmark read its figures). */
    public Optional<LongPoller> longPoller() {
        return Optional.ofNullable(longPoller);
    }

    // ------------------------------------------------------------------------------------------ plumbing

    @FunctionalInterface
    interface SqlWork<T> {
        T run(Connection c) throws SQLException;
    }

    /**
     * Runs one operation on a pooled connection and classifies its failure. A call that failed because a stored
     * function was replaced under it (0A000) is re-run once: the statement rolled back, so re-running is safe.
     */
    <T> T call(String op, SqlWork<T> work) {
        if (closed.get()) {
            throw ProviderException.permanent(op, "the provider is closed");
        }
        return run(op, work);
    }

    /** {@link #call} without the closed check: the ack flusher drains its buffer while the provider closes. */
    private <T> T run(String op, SqlWork<T> work) {
        for (int attempt = 1; ; attempt++) {
            try (Connection c = dataSource.getConnection()) {
                return work.run(c);
            } catch (SQLException e) {
                if (attempt == 1 && SqlErrors.CACHED_PLAN_CHANGED.equals(e.getSQLState())) {
                    LOG.debug("pgdurable: {} re-run after a function was replaced: {}", op, e.getMessage());
                    continue;
                }
                throw SqlErrors.translate(op, e);
            }
        }
    }

    private static String newToken() {
        return "lock_" + UUID.randomUUID();
    }

    private static void setLongOrNull(PreparedStatement ps, int index, Long value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.BIGINT);
        } else {
            ps.setLong(index, value);
        }
    }

    private static int singleInt(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static String[] strings(Array array) throws SQLException {
        return array == null ? new String[0] : (String[]) array.getArray();
    }

    private static Long[] longs(Array array) throws SQLException {
        return array == null ? new Long[0] : (Long[]) array.getArray();
    }

    private static void logWarnings(SQLWarning warning) {
        for (SQLWarning w = warning; w != null; w = w.getNextWarning()) {
            LOG.warn("{}", w.getMessage());
        }
    }
}
