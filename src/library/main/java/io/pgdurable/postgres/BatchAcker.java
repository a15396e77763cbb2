package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import java.util.ArrayList;
import java.util.function.ObjLongConsumer;

import io.pgdurable.spi.ProviderException;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Terminal acks of the worker queue in one {@code ack_work_items} call each: the caller's own list
 * ({@code ackWorkItems}, on the caller's thread) and, with {@code ackBatchSize} above 1, the group commit of single
 * acks, each handed to a {@link WorkCompleter} and blocking until its flush answers.
 */
final class BatchAcker {
    // The provider's logger name, as before these classes were split out, so logging configuration still applies.
    private static final Logger LOG = LoggerFactory.getLogger(BatchAcker.class);
    private static final String OP = "ackWorkItem";
    /** Client-side cancel of a batched ack flush that hangs (pgjdbc query timeout, whole seconds). */
    private static final int ACK_FLUSH_TIMEOUT_SECONDS = 30;
    /** Acks per {@code ack_work_items} call of {@link #ackAll}: bounds one transaction's rows and reply. */
    static final int MAX_ACKS_PER_CALL = 1000;

    private final SqlRunner db;
    private final Statements sql;
    /** Null with {@code ackBatchSize} 1: single acks are then one {@code ack_work_item} call each. */
    private final WorkCompleter completer;
    private final Duration waitBound;
    private final ObjLongConsumer<List<Hint>> announce;

    BatchAcker(SqlRunner db, Statements sql, String schema, int batchSize, Duration flushIdle,
               Duration connectionTimeout, ObjLongConsumer<List<Hint>> announce) {
        this.announce = announce;
        this.db = db;
        this.sql = sql;
        this.completer = batchSize > 1
                ? new WorkCompleter("pgdurable-acks-" + schema, OP, batchSize, flushIdle, acks -> flush(OP, acks)) : null;
        this.waitBound = waitBound(connectionTimeout, batchSize, flushIdle);
    }

    void start() {
        if (completer != null) {
            completer.start();
        }
    }

    /** Whether single acks are grouped ({@code ackBatchSize} above 1). */
    boolean grouping() {
        return completer != null;
    }

    /**
     * Acks {@code acks} on the caller's thread, in calls of at most {@value #MAX_ACKS_PER_CALL}: per position null
     * (acked) or that item's own error. Throws when a call failed as a whole (that call acked nothing).
     */
    ProviderException[] ackAll(String op, List<WorkCompleter.Ack> acks) {
        ProviderException[] out = new ProviderException[acks.size()];
        for (int from = 0; from < acks.size(); from += MAX_ACKS_PER_CALL) {
            int to = Math.min(acks.size(), from + MAX_ACKS_PER_CALL);
            ProviderException[] part = flush(op, acks.subList(from, to));
            System.arraycopy(part, 0, out, from, part.length);
        }
        return out;
    }

    /** Returns once the ack is committed, or throws its own error or its flush's. */
    void ack(WorkCompleter.Ack ack) {
        if (db.closed()) {
            throw ProviderException.permanent(OP, "the provider is closed");
        }
        WorkCompleter.await(OP, completer.submit(ack), waitBound);
    }

    int pending() {
        return completer == null ? 0 : completer.pending();
    }

    /** Flushes buffered acks within {@code drain}; the caller closes the pool only afterwards. */
    void close(Duration drain) {
        if (completer != null) {
            completer.close(drain);
        }
    }

    /**
     * How long an ack waits for its batched flush at most: a safety net above the real bounds (the flush ahead of
     * it and its own, each at most the pool wait plus the flush's query timeout, plus the idle window of every ack
     * that can join before it).
     */
    private static Duration waitBound(Duration connectionTimeout, int batchSize, Duration flushIdle) {
        return connectionTimeout.multipliedBy(2)
                .plusSeconds(2L * ACK_FLUSH_TIMEOUT_SECONDS + 5)
                .plus(flushIdle.multipliedBy(batchSize));
    }

    /**
     * One batched flush: {@code ack_work_items} deletes the batch with one {@code DELETE ... RETURNING} (the lease
     * check per item), enqueues the completions and marks sessions active. A deadlock or serialization failure is
     * re-run once (the call rolled back as a whole).
     */
    private ProviderException[] flush(String op, List<WorkCompleter.Ack> acks) {
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
        SqlRunner.SqlWork<ProviderException[]> work = c -> {
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
        ProviderException[] outcomes;
        try {
            outcomes = db.run(op, work);
        } catch (ProviderException e) {
            String state = e.sqlState().orElse("");
            if (!(state.equals("40P01") || state.equals("40001"))) {
                throw e;
            }
            LOG.debug("pgdurable: batched ack flush re-run after {}", e.getMessage());
            outcomes = db.run(op, work);
        }
        announceCompletions(acks, outcomes);
        return outcomes;
    }

    /** The completions stored by acks that kept their lease are claimable on the orchestrator queue. */
    private void announceCompletions(List<WorkCompleter.Ack> acks, ProviderException[] outcomes) {
        List<String> instances = new ArrayList<>();
        List<Long> times = new ArrayList<>();
        long latest = Long.MIN_VALUE;
        for (int i = 0; i < outcomes.length; i++) {
            WorkCompleter.Ack a = acks.get(i);
            if (outcomes[i] == null && a.completionJson() != null) {
                instances.add(a.instance());
                times.add(a.nowMs());
                latest = Math.max(latest, a.nowMs());
            }
        }
        if (!instances.isEmpty()) {
            announce.accept(Announcements.orchestratorMessages(instances, times), latest);
        }
    }
}
