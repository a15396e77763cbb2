package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.singleInt;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.spi.BatchEnqueueException;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.ObjLongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batched enqueue onto either queue (docs/batching.md): validates and encodes the whole list first, then stores it
 * in chunks bounded by count and bytes, one statement (one transaction) per chunk, in list order. Fails fast with a
 * {@link BatchEnqueueException} that says what is stored, in doubt and not stored, unless an
 * {@code enqueueRetryBudget} allows retrying a chunk that failed retryably.
 */
final class BatchEnqueuer {
    // The provider's logger name, as before these classes were split out, so logging configuration still applies.
    private static final Logger LOG = LoggerFactory.getLogger(BatchEnqueuer.class);

    private final SqlRunner db;
    private final Statements sql;
    private final Payloads payloads;
    private final Clock clock;
    private final int chunkItems;
    private final long chunkBytes;
    private final Duration retryBudget;
    private final ObjLongConsumer<List<Hint>> announce;

    BatchEnqueuer(SqlRunner db, Statements sql, Payloads payloads, Clock clock, int chunkItems, long chunkBytes,
                  Duration retryBudget, ObjLongConsumer<List<Hint>> announce) {
        this.announce = announce;
        this.db = db;
        this.sql = sql;
        this.payloads = payloads;
        this.clock = clock;
        this.chunkItems = chunkItems;
        this.chunkBytes = chunkBytes;
        this.retryBudget = retryBudget;
    }

    /** Activities onto the worker queue; every item is validated before anything is stored. */
    void enqueueAllForWorker(List<WorkItem> items) {
        String op = "enqueueAllForWorker";
        Encoded batch = encodeAll(op, items, true);
        String[] json = batch.json();
        if (json.length == 0) {
            return;
        }
        long now = clock.millis();
        storeInChunks(op, json, (c, from, to) -> {
            int m = to - from;
            List<WorkItem.ActivityExecute> chunk = new ArrayList<>(m);
            String[] instances = new String[m];
            Long[] executions = new Long[m];
            Long[] activities = new Long[m];
            String[] sessions = new String[m];
            String[] tags = new String[m];
            for (int i = 0; i < m; i++) {
                WorkItem.ActivityExecute a = (WorkItem.ActivityExecute) batch.items()[from + i];
                chunk.add(a);
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
                int stored = singleInt(ps);
                announce.accept(Announcements.workerItems(now, chunk), now);
                return stored;
            }
        });
    }

    /**
     * Orchestrator messages; each becomes visible as with a single enqueue (the same delay for all, a timer never
     * before its fire time).
     */
    void enqueueAllForOrchestrator(List<WorkItem> items, Duration delay) {
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
                int stored = singleInt(ps);
                announce.accept(Announcements.orchestratorMessages(List.of(instances), List.of(visibleAt)), now);
                return stored;
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
        long budget = retryBudget.toNanos();
        boolean logged = false;
        List<int[]> chunks = chunks(json, chunkItems, chunkBytes);
        for (int k = 0; k < chunks.size(); k++) {
            int from = chunks.get(k)[0];
            int to = chunks.get(k)[1];
            long pause = 50;
            while (true) {
                long started = db.startTimer();
                ChunkFailure failure = storeChunk(op, writer, from, to);
                db.ended(op, started, failure == null ? null : failure.error());
                if (failure == null) {
                    break;
                }
                ProviderException cause = failure.error();
                String where = "chunk " + (k + 1) + " of " + chunks.size() + " (items #" + from + "..#" + (to - 1)
                        + ") failed: " + stripOperation(cause);
                long elapsed = System.nanoTime() - start;
                long wait = Math.min(pause, 1000) + ThreadLocalRandom.current().nextLong(Math.max(1, pause / 4));
                boolean retry = cause.retryable() && !failure.inDoubt() && !db.closed()
                        && elapsed + TimeUnit.MILLISECONDS.toNanos(wait) < budget;
                if (retry) {
                    if (!logged) {
                        logged = true;
                        LOG.warn("pgdurable: {} batch of {} item(s): {}; retrying for up to {} in all", op, n, where,
                                retryBudget);
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
        if (db.closed()) {
            return new ChunkFailure(ProviderException.permanent(op, "the provider is closed"), false);
        }
        for (int attempt = 1; ; attempt++) {
            Connection c;
            try {
                c = db.dataSource().getConnection();
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
}
