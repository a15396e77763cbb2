package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The machine's own yardstick, measured in the same run on the same database: a raw-SQL queue shaped like the
 * issue's pgbench reference (insert; claim the oldest row with {@code FOR UPDATE SKIP LOCKED}; delete it; each
 * statement its own transaction) driven by the same number of clients over plain JDBC, one item at a time and in
 * batches. It puts the provider's figures into proportion; no target is judged on it.
 */
final class RawQueueBaseline {
    private RawQueueBaseline() {}

    /** Items/s of the single-item and the batched raw queue. */
    record Result(double singlePerSecond, double batchedPerSecond, int batch) {
        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("singleItemsPerSecond", Num.round(singlePerSecond));
            m.put("batchedItemsPerSecond", Num.round(batchedPerSecond));
            m.put("batch", batch);
            m.put("shape", "per item: INSERT; UPDATE ... WHERE id = (SELECT id ... ORDER BY id FOR UPDATE SKIP "
                    + "LOCKED LIMIT n) RETURNING id; DELETE ... WHERE id = ANY(...) — autocommit, plain JDBC");
            return m;
        }
    }

    static Result measure(BenchContext ctx, int clients, int batch) throws Exception {
        String schema = ctx.schema("throughput_raw", Mode.SHORT);
        String q = Identifiers.quote(schema) + ".q";
        try (Connection c = DriverManager.getConnection(ctx.url()); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA IF NOT EXISTS " + Identifiers.quote(schema));
            st.execute("CREATE TABLE IF NOT EXISTS " + q + " (id bigserial PRIMARY KEY, payload text NOT NULL, "
                    + "locked boolean NOT NULL DEFAULT false)");
        }
        Profile p = ctx.profile();
        double single = run(ctx, q, clients, 1, p);
        double batched = run(ctx, q, clients, batch, p);
        return new Result(single, batched, batch);
    }

    private static double run(BenchContext ctx, String q, int clients, int n, Profile p) throws Exception {
        AtomicLong done = new AtomicLong();
        List<Connection> connections = new ArrayList<>();
        Workers workers = new Workers();
        try {
            for (int i = 0; i < clients; i++) {
                connections.add(DriverManager.getConnection(ctx.url()));
            }
            workers.start("raw-" + n, clients, i -> {
                Connection c = connections.get(i);
                return () -> cycle(c, q, n, done);
            });
            Window w = Window.measure(ctx, workers, done, p.throughputWarmup(), p.throughputWindow(),
                    "raw SQL reference, batch " + n, "items");
            workers.stop();
            return w.perSecond();
        } finally {
            workers.stop();
            workers.join();
            for (Connection c : connections) {
                c.close();
            }
        }
    }

    private static void cycle(Connection c, String q, int n, AtomicLong done) throws SQLException {
        String[] payloads = new String[n];
        java.util.Arrays.fill(payloads, "{\"raw\":true}");
        try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + q + " (payload) SELECT unnest(?::text[])")) {
            ins.setArray(1, c.createArrayOf("text", payloads));
            ins.executeUpdate();
        }
        List<Long> ids = new ArrayList<>();
        try (PreparedStatement claim = c.prepareStatement("UPDATE " + q + " SET locked = true WHERE id IN (SELECT id "
                + "FROM " + q + " WHERE NOT locked ORDER BY id FOR UPDATE SKIP LOCKED LIMIT ?) RETURNING id")) {
            claim.setInt(1, n);
            try (ResultSet rs = claim.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
        }
        if (ids.isEmpty()) {
            return;
        }
        try (PreparedStatement del = c.prepareStatement("DELETE FROM " + q + " WHERE id = ANY (?)")) {
            Array arr = c.createArrayOf("bigint", ids.toArray());
            del.setArray(1, arr);
            del.executeUpdate();
        }
        done.addAndGet(ids.size());
    }
}
