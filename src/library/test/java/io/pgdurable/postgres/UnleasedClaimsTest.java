package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Worker claims find unleased rows through {@code worker_queue_unleased_idx} and do not walk the leased rows in
 * front of them, while the rows they claim, and their order, are those of the query over the primary key, ended
 * leases included. What each claim read is taken from {@code pg_stat_get_xact_tuples_returned} per index, the
 * counters of the claim's own transaction (current inside it, without waiting for the statistics to be flushed).
 */
class UnleasedClaimsTest {
    private static final long LOCK_MS = 60_000;
    private String schema;
    private String s;
    private Connection c;

    @BeforeEach
    void migrate() throws SQLException {
        schema = TestDatabase.newSchemaName("unleased");
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        s = Identifiers.quote(schema);
        c = TestDatabase.connect();
    }

    @AfterEach
    void drop() throws SQLException {
        c.close();
        TestDatabase.dropSchema(schema);
    }

    /** Enqueues activities 1..n (work items "item-1".."item-n") at time {@code at}. */
    private void enqueue(int n, long at) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("SELECT " + s + ".enqueue_worker_items(array_agg('item-' || g ORDER BY g), " + at
                    + ", array_agg('inst'::text ORDER BY g), array_agg(1::bigint ORDER BY g), array_agg(g::bigint ORDER BY g), "
                    + "array_agg(NULL::text ORDER BY g), array_agg(NULL::text ORDER BY g)) FROM generate_series(1, "
                    + n + ") g");
        }
    }

    /** Single claim at {@code now}: the claimed item, or null. */
    private String claimOne(long now, String token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT work_item FROM " + s
                + ".fetch_work_item(?, ?, ?, NULL, 0, 0, '{}')")) {
            ps.setLong(1, now);
            ps.setLong(2, LOCK_MS);
            ps.setString(3, token);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /** Batched claim at {@code now}: the claimed items in reply order. */
    private List<String> claimMany(long now, String prefix, int max) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT item FROM " + s
                + ".fetch_work_items(?, ?, ?, NULL, 0, 0, '{}', ?, 1000000000, true) WHERE token IS NOT NULL")) {
            ps.setLong(1, now);
            ps.setLong(2, LOCK_MS);
            ps.setString(3, prefix);
            ps.setInt(4, max);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /** Index tuples read so far in this transaction, per index of the worker queue. */
    private Map<String, Long> indexReads() throws SQLException {
        Map<String, Long> out = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT x.relname::text, "
                + "pg_stat_get_xact_tuples_returned(x.oid) FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid "
                + "WHERE i.indrelid = to_regclass(?) ORDER BY 1")) {
            ps.setString(1, s + ".worker_queue");
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return out;
    }

    /** Index entries read per index between two readings. */
    private static Map<String, Long> minus(Map<String, Long> after, Map<String, Long> before) {
        Map<String, Long> out = new LinkedHashMap<>();
        after.forEach((k, v) -> out.put(k, v - before.getOrDefault(k, 0L)));
        return out;
    }

    @Test
    void claims_behind_many_leased_rows_do_not_walk_them() throws SQLException {
        long now = System.currentTimeMillis();
        enqueue(500, now);
        assertEquals(498, claimMany(now, "head", 498).size(), "the oldest 498 are leased");

        // The former query walked the primary key from the smallest id over the 498 leased rows. The unleased index
        // may still hold dead entries for the versions the claims replaced (VACUUM removes them, and only when no
        // other transaction's snapshot can see them): every query steps over those, so they are not counted here.
        c.setAutoCommit(false);
        try {
            Map<String, Long> before = indexReads();
            assertEquals("item-499", claimOne(now, "one"));
            Map<String, Long> read = minus(indexReads(), before);
            assertTrue(read.get("worker_queue_pkey") <= 2, "a single claim walked the primary key: " + read);
            assertTrue(read.get("worker_queue_unleased_idx") >= 1, "not through the unleased index: " + read);
            assertEquals(0L, read.get("worker_queue_visible_idx"), "visible-time index read: " + read);

            before = indexReads();
            assertEquals(List.of("item-500"), claimMany(now, "many", 10));
            read = minus(indexReads(), before);
            assertTrue(read.get("worker_queue_pkey") <= 2, "a batched claim walked the primary key: " + read);
            assertTrue(read.get("worker_queue_unleased_idx") >= 1, "not through the unleased index: " + read);
            assertEquals(0L, read.get("worker_queue_visible_idx"), "visible-time index read: " + read);
        } finally {
            c.rollback();
            c.setAutoCommit(true);
        }
    }

    @Test
    void an_expired_lease_is_claimed_in_id_order_with_the_unleased_rows() throws SQLException {
        long t0 = System.currentTimeMillis();
        enqueue(3, t0);
        assertEquals("item-1", claimOne(t0, "a"));
        long expired = t0 + LOCK_MS; // item-1's lease ends here: claimable again, and oldest
        assertEquals("item-1", claimOne(expired, "a2"), "the expired lease goes first, as in id order");
        assertEquals("item-2", claimOne(expired, "b"), "then the unleased rows, oldest first");

        long both = expired + LOCK_MS; // item-1 and item-2 expired, item-3 never leased
        assertEquals(List.of("item-1", "item-2", "item-3"), claimMany(both, "all", 10),
                "expired leases and unleased rows together, in id order");
        assertEquals(List.of(), claimMany(both, "none", 10), "nothing else is claimable");
    }

    @Test
    void an_unleased_row_older_than_an_expired_lease_goes_first() throws SQLException {
        long t0 = System.currentTimeMillis();
        enqueue(2, t0);
        assertEquals(List.of("item-1", "item-2"), claimMany(t0, "ab", 2));
        // The token the claim wrote for item-1 (its form is the claim's business: a batched claim names the row in it).
        try (PreparedStatement ps = c.prepareStatement("SELECT " + s + ".abandon_work_item((SELECT lock_token FROM "
                + s + ".worker_queue WHERE work_item = 'item-1'), ?, 0, false)")) {
            ps.setLong(1, t0);
            ps.execute(); // item-1 released: unleased again, while item-2's lease runs on
        }
        long later = t0 + LOCK_MS; // item-2's lease has ended too
        assertEquals("item-1", claimOne(later, "x"), "the released row is older");
        assertEquals("item-2", claimOne(later, "y"));
        assertEquals(null, claimOne(later, "z"));
    }
}
