package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.Route;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.SessionFetchConfig;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.ObjLongConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The batched worker fetch (docs/batching.md): claim attempts of up to {@code maxItems - held} items (one SQL call
 * each), until at least {@code minItems} are held, the reply is full (count or {@code fetchBatchMaxBytes}) or
 * {@code maxWait} ends. With long polling an attempt that finds nothing parks (the long-poll wait), and an empty
 * return ends the fetch; in short-poll mode attempts repeat every {@value #BATCH_POLL_PAUSE_MS} ms within
 * {@code maxWait} (the one place the SQL layer waits for work).
 */
final class BatchFetcher {
    // The provider's logger name, as before these classes were split out, so logging configuration still applies.
    private static final Logger LOG = LoggerFactory.getLogger(BatchFetcher.class);

    /** Pause between claim attempts of a batched fetch waiting for its minimum in short-poll mode. */
    static final long BATCH_POLL_PAUSE_MS = 50;

    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final Leases leases;
    private final long maxReplyBytes;
    /** Null in short-poll mode. */
    private final LongPoller longPoller;
    private final ObjLongConsumer<List<Hint>> announce;
    private final ClockSkewMonitor clockSkew;

    BatchFetcher(SqlRunner db, Statements sql, Clock clock, Leases leases, long maxReplyBytes,
                 LongPoller longPoller, ObjLongConsumer<List<Hint>> announce, ClockSkewMonitor clockSkew) {
        this.announce = announce;
        this.clockSkew = clockSkew;
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.leases = leases;
        this.maxReplyBytes = maxReplyBytes;
        this.longPoller = longPoller;
    }

    List<FetchedWorkItem> fetchWorkItems(Duration lockTimeout, WorkBatch batch, SessionFetchConfig session,
                                         TagFilter tagFilter) {
        String op = "fetchWorkItems";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Payloads.notNull(op, "batch", batch);
        Payloads.notNull(op, "tagFilter", tagFilter);
        if (tagFilter instanceof TagFilter.None) {
            return List.of();
        }
        WorkerClaim request = WorkerClaim.of(lockMs, session, tagFilter);
        clockSkew.admit(op); // a long-polled attempt may park without a claim
        Route route = Route.worker(tagFilter, session != null);
        long deadline = System.nanoTime() + batch.maxWait().toNanos();
        List<FetchedWorkItem> out = new ArrayList<>();
        long bytes = 0;
        while (true) {
            int want = batch.maxItems() - out.size();
            long budget = maxReplyBytes - bytes;
            boolean firstFree = out.isEmpty();
            Supplier<Optional<ClaimedBatch>> claim = () -> {
                ClaimedBatch c = claimWorkItems(op, request, want, budget, firstFree);
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

    private ClaimedBatch claimWorkItems(String op, WorkerClaim request, int maxItems, long maxBytes,
                                        boolean firstFree) {
        clockSkew.admit(op); // refused between attempts: the fetch returns what it holds
        String prefix = SqlRunner.newToken();
        long now = clock.millis();
        List<String[]> undecodable = new ArrayList<>(); // token, reason
        ClaimedBatch claimed = db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchWorkItems)) {
                request.bind(c, ps, now, prefix);
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
        if (!claimed.items().isEmpty()) {
            List<WorkItem> items = new ArrayList<>(claimed.items().size());
            claimed.items().forEach(f -> items.add(f.item()));
            announce.accept(request.leaseHints(now, items), now);
        }
        if (!undecodable.isEmpty()) {
            for (String[] bad : undecodable) {
                leases.releaseUndecodableWorkItem(bad[0]);
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
}
