package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.singleInt;

import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.Route;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker queue's operations of {@link PostgresProvider}: work items are enqueued, fetched (claimed, or with long
 * polling parked until one can be), acked, renewed and abandoned, and session leases renewed and cleaned up.
 * Batching (docs/batching.md) is {@link BatchFetcher}'s, {@link BatchEnqueuer}'s and {@link BatchAcker}'s, and how a
 * write reaches waiting fetches the provider's {@link WritePath}.
 */
final class WorkerQueue {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerQueue.class);

    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final Payloads payloads;
    private final Leases leases;
    /** Null in short-poll mode: a fetch then claims once and returns. */
    private final LongPoller longPoller;
    private final WritePath writes;
    private final WriteAnnouncements announcements;
    private final BatchFetcher batchFetcher;
    private final BatchEnqueuer batchEnqueuer;
    /** Acks in one call per list ({@link #ackAll}) and, with {@code ackBatchSize} above 1, grouped single acks. */
    private final BatchAcker acker;
    private final ClockSkewMonitor clockSkew;

    WorkerQueue(SqlRunner db, Statements sql, Clock clock, Payloads payloads, Leases leases, LongPoller longPoller,
                WritePath writes, WriteAnnouncements announcements, BatchFetcher batchFetcher,
                BatchEnqueuer batchEnqueuer, BatchAcker acker, ClockSkewMonitor clockSkew) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.payloads = payloads;
        this.leases = leases;
        this.longPoller = longPoller;
        this.writes = writes;
        this.announcements = announcements;
        this.batchFetcher = batchFetcher;
        this.batchEnqueuer = batchEnqueuer;
        this.acker = acker;
        this.clockSkew = clockSkew;
    }

    void enqueue(WorkItem item) {
        String op = "enqueueForWorker";
        String json = payloads.encode(op, "item", item);
        if (!(item instanceof WorkItem.ActivityExecute a)) {
            throw ProviderException.permanent(op, item.kind() + " belongs on the orchestrator queue; only "
                    + "ActivityExecute goes to the worker queue");
        }
        writes.enqueueForWorker(op, json, clock.millis(), a);
    }

    void enqueueAll(List<WorkItem> items) {
        batchEnqueuer.enqueueAllForWorker(items);
    }

    Optional<FetchedWorkItem> fetch(Duration lockTimeout, Duration pollTimeout, SessionFetchConfig session,
                                    TagFilter tagFilter) {
        String op = "fetchWorkItem";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None) {
            return Optional.empty();
        }
        WorkerClaim request = WorkerClaim.of(lockMs, session, tagFilter);
        clockSkew.admit(op); // a long-polled fetch may park without a claim
        Supplier<Optional<FetchedWorkItem>> claim = () -> claim(op, request);
        return longPoller == null ? claim.get()
                : longPoller.fetch(QueueKind.WORKER, Route.worker(tagFilter, session != null),
                        Arrays.asList(tagFilter, session == null ? null : session.ownerId()),
                        HandOver.takerFor(request, tagFilter), pollTimeout, op, claim);
    }

    List<FetchedWorkItem> fetchBatch(Duration lockTimeout, WorkBatch batch, SessionFetchConfig session,
                                     TagFilter tagFilter) {
        return batchFetcher.fetchWorkItems(lockTimeout, batch, session, tagFilter);
    }

    private Optional<FetchedWorkItem> claim(String op, WorkerClaim request) {
        clockSkew.admit(op); // the clock may have gone past the limit while the fetch was parked
        String token = SqlRunner.newToken();
        long now = clock.millis();
        Optional<FetchedWorkItem> claimed = db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchWorkItem)) {
                request.bind(c, ps, now, token);
                return readClaimed(op, ps, token, true);
            }
        });
        claimed.ifPresent(got -> announcements.announce(request.leaseHints(now, List.of(got.item())), now));
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
    Optional<FetchedWorkItem> ackAndFetchNext(String lockToken, WorkItem completion, Duration lockTimeout,
                                              SessionFetchConfig session, TagFilter tagFilter) {
        String op = "ackWorkItemAndFetchNext";
        Payloads.notNull(op, "lockToken", lockToken);
        String completionJson = completionJson(op, "completion", completion);
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None || !clockSkew.admits()) {
            // A clock past the skew limit takes no lease, but the ack stands: an error here would read as a failed
            // ack. The next plain fetch reports the refusal.
            ack(lockToken, completion);
            return Optional.empty();
        }
        WorkerClaim request = WorkerClaim.of(lockMs, session, tagFilter);
        String token = SqlRunner.newToken();
        long now = clock.millis();
        Optional<FetchedWorkItem> next = db.call(op, c -> {
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
        next.ifPresent(got -> announcements.announce(request.leaseHints(now, List.of(got.item())), now));
        return next;
    }

    /**
     * All acks in one {@code ack_work_items} call per {@value BatchAcker#MAX_ACKS_PER_CALL}, on the caller's thread
     * (no hand-off to the group-commit flusher, whatever {@code ackBatchSize} says). Every argument is checked before
     * anything is sent.
     */
    List<AckResult> ackAll(List<WorkAck> acks) {
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

    void ack(String lockToken, WorkItem completion) {
        String op = "ackWorkItem";
        Payloads.notNull(op, "lockToken", lockToken);
        String completionJson = completionJson(op, "completion", completion);
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
        db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.ackWorkItem)) {
                ack.bind(ps);
                ps.execute();
                return null;
            }
        });
    }

    /** Acks handed to the batched-ack flusher and not yet answered; always 0 with {@code ackBatchSize} 1. */
    int pendingAcks() {
        return acker.pending();
    }

    void renew(String lockToken, Duration extendFor) {
        leases.renewWorkItemLock(lockToken, extendFor);
    }

    void abandon(String lockToken, Duration delay, boolean ignoreAttempt) {
        leases.abandonWorkItem(lockToken, delay, ignoreAttempt);
    }

    int renewSessionLock(List<String> ownerIds, Duration extendFor, Duration idleTimeout) {
        String op = "renewSessionLock";
        Payloads.notNull(op, "ownerIds", ownerIds);
        long extendMs = Payloads.positiveMillis(op, "extendFor", extendFor);
        long idleMs = Payloads.delayMillis(op, idleTimeout);
        if (ownerIds.isEmpty()) {
            return 0;
        }
        String[] owners = ownerIds.toArray(new String[0]);
        long now = clock.millis();
        int renewed = db.call(op, c -> {
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

    int cleanupOrphanedSessions() {
        long now = clock.millis();
        return db.call("cleanupOrphanedSessions", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.cleanupOrphanedSessions)) {
                ps.setLong(1, now);
                return singleInt(ps);
            }
        });
    }
}
