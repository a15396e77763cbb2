package io.pgdurable.chaos;

import io.pgdurable.postgres.Identifiers;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The run's bookkeeping of every item: what the producers know of their enqueues (committed, or ambiguous because
 * the call failed and the commit may or may not have happened), and what the consumers handled, in a table
 * ({@code chaos_ledger} in the run's schema, one row per item and run, counting deliveries) written before each ack.
 * {@link #verify} compares the two.
 *
 * <p>A second delivery is expected only when the first one's ack failed (or the ledger write around it did): the
 * item then comes back when its lease ends. Any other second delivery is unexplained.
 */
final class Ledger {
    static final String TABLE = "chaos_ledger";

    private final String runId;
    private final String createSql;
    private final String recordSql;
    private final String readSql;
    private final String deleteSql;

    private final Map<Long, Long> committedAt = new ConcurrentHashMap<>();
    private final Set<Long> ambiguous = ConcurrentHashMap.newKeySet();
    private final Map<Long, Long> firstFetchAt = new ConcurrentHashMap<>();
    private final Set<Long> recorded = ConcurrentHashMap.newKeySet();
    private final Set<Long> ackFailed = ConcurrentHashMap.newKeySet();
    private final Set<Long> recordFailed = ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.atomic.AtomicLong lastLeftLeased =
            new java.util.concurrent.atomic.AtomicLong(System.nanoTime());

    Ledger(String schema, String runId) {
        this.runId = runId;
        String table = Identifiers.quote(schema) + "." + TABLE;
        this.createSql = "CREATE TABLE IF NOT EXISTS " + table + " (run_id text NOT NULL, item bigint NOT NULL, "
                + "deliveries integer NOT NULL, first_handled timestamptz NOT NULL DEFAULT clock_timestamp(), "
                + "PRIMARY KEY (run_id, item))";
        this.recordSql = "INSERT INTO " + table + " AS l (run_id, item, deliveries) VALUES (?, ?, 1) "
                + "ON CONFLICT (run_id, item) DO UPDATE SET deliveries = l.deliveries + 1";
        this.readSql = "SELECT item, deliveries FROM " + table + " WHERE run_id = ?";
        this.deleteSql = "DELETE FROM " + table + " WHERE run_id = ?";
    }

    void createTable(Connection c) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute(createSql);
        }
    }

    /** The enqueue call returned: the item is committed (at the latest now). */
    void committed(long item, long nanoTime) {
        committedAt.put(item, nanoTime);
    }

    /** The enqueue call failed: the item may or may not be in the queue. */
    void ambiguous(long item) {
        ambiguous.add(item);
    }

    void fetched(long item, long nanoTime) {
        firstFetchAt.putIfAbsent(item, nanoTime);
    }

    /** Writes one delivery to the table (committed on return, autocommit). */
    void record(Connection c, long item) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(recordSql)) {
            ps.setString(1, runId);
            ps.setLong(2, item);
            ps.executeUpdate();
        }
        recorded.add(item);
    }

    /** The ledger write failed: it may have committed, and the unacked item comes back. */
    void recordFailed(long item) {
        recordFailed.add(item);
        lastLeftLeased.set(System.nanoTime());
    }

    void ackFailed(long item) {
        ackFailed.add(item);
        lastLeftLeased.set(System.nanoTime());
    }

    /**
     * When an item was last left leased (its ack or ledger write failed): the queue depth does not count leased
     * items, so until that lease has ended an empty queue does not mean a drained one.
     */
    long lastLeftLeasedNanos() {
        return lastLeftLeased.get();
    }

    int committedCount() {
        return committedAt.size();
    }

    int recordedCount() {
        return recorded.size();
    }

    /** Whether every committed item has been handled (as far as this process saw). */
    boolean allCommittedRecorded() {
        return recorded.containsAll(committedAt.keySet());
    }

    void deleteRun(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(deleteSql)) {
            ps.setString(1, runId);
            ps.executeUpdate();
        }
    }

    /** Reads the table and compares it with what the producers know. */
    Verdict verify(Connection c) throws SQLException {
        Map<Long, Integer> deliveries = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(readSql)) {
            ps.setString(1, runId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    deliveries.put(rs.getLong(1), rs.getInt(2));
                }
            }
        }
        List<Long> lost = new ArrayList<>();
        for (Long item : committedAt.keySet()) {
            if (!deliveries.containsKey(item)) {
                lost.add(item);
            }
        }
        long ambiguousDelivered = 0;
        long phantom = 0;
        long explained = 0;
        long unexplained = 0;
        long total = 0;
        List<Long> unexplainedItems = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : deliveries.entrySet()) {
            long item = e.getKey();
            int n = e.getValue();
            total += n;
            if (!committedAt.containsKey(item)) {
                if (ambiguous.contains(item)) {
                    ambiguousDelivered++;
                } else {
                    phantom++;
                }
            }
            if (n > 1) {
                if (ackFailed.contains(item) || recordFailed.contains(item)) {
                    explained += n - 1;
                } else {
                    unexplained += n - 1;
                    unexplainedItems.add(item);
                }
            }
        }
        long[] gaps = pickupGaps();
        long worstItem = -1;
        long worst = 0;
        for (Map.Entry<Long, Long> e : committedAt.entrySet()) {
            Long fetched = firstFetchAt.get(e.getKey());
            if (fetched != null && fetched - e.getValue() > worst) {
                worst = fetched - e.getValue();
                worstItem = e.getKey();
            }
        }
        lost.sort(null);
        unexplainedItems.sort(null);
        return new Verdict(runId, committedAt.size(), ambiguous.size(), ambiguousDelivered, deliveries.size(), total,
                lost.size(), first(lost), phantom, explained, unexplained, first(unexplainedItems), ackFailed.size(),
                worst, worstItem, percentile(gaps, 0.5), percentile(gaps, 0.99));
    }

    /**
     * Each committed item's wait from its enqueue call's return to its first fetch. The commit happens before the
     * return, so a fetch can come first: counted as 0.
     */
    private long[] pickupGaps() {
        long[] gaps = new long[committedAt.size()];
        int n = 0;
        for (Map.Entry<Long, Long> e : committedAt.entrySet()) {
            Long fetched = firstFetchAt.get(e.getKey());
            if (fetched != null) {
                gaps[n++] = Math.max(0, fetched - e.getValue());
            }
        }
        gaps = Arrays.copyOf(gaps, n);
        Arrays.sort(gaps);
        return gaps;
    }

    private static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
    }

    private static List<Long> first(List<Long> items) {
        return List.copyOf(items.subList(0, Math.min(10, items.size())));
    }

    /** What the ledger shows after a run. Times in nanoseconds. */
    record Verdict(String runId, long committed, long ambiguous, long ambiguousDelivered, long consumed,
                   long deliveries, long lost, List<Long> lostItems, long phantom, long duplicatesExplained,
                   long duplicatesUnexplained, List<Long> unexplainedItems, long failedAcks, long worstGapNanos,
                   long worstGapItem, long medianGapNanos, long p99GapNanos) {
        boolean passed() {
            return lost == 0 && duplicatesUnexplained == 0 && phantom == 0;
        }
    }
}
