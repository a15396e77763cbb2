package io.pgdurable.postgres.batch;

import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/** Direct SQL on a test schema (what is really stored), a clock tests can move, and a bounded condition wait. */
final class BatchDb {
    private BatchDb() {}

    /** A plain activity of instance "inst" with input "{}": no session, no tag. */
    static WorkItem.ActivityExecute activity(long id) {
        return new WorkItem.ActivityExecute("inst", 1, id, "A", "{}");
    }

    static String q(String schema) {
        return "\"" + schema + "\"";
    }

    static void execute(String sql) {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    static long count(String schema, String tableAndWhere) {
        return longs("SELECT count(*) FROM " + q(schema) + "." + tableAndWhere).get(0);
    }

    /** The first column of every row, as longs. */
    static List<Long> longs(String sql) {
        List<Long> out = new ArrayList<>();
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
        return out;
    }

    static List<String> strings(String sql) {
        List<String> out = new ArrayList<>();
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
        return out;
    }

    /** Activity ids of the worker queue in row (id) order. */
    static List<Long> workerActivities(String schema) {
        return longs("SELECT activity_id FROM " + q(schema) + ".worker_queue ORDER BY id");
    }

    /**
     * How many rows of {@code table} each writing transaction stored, in row order: rows sharing an {@code xmin}
     * were written by one statement of the provider (one call = one transaction).
     */
    static List<Long> rowsPerTransaction(String schema, String table) {
        return longs("SELECT count(*) FROM " + q(schema) + "." + table
                + " GROUP BY xmin::TEXT ORDER BY min(id)");
    }

    /** Waits (spinning, no sleeps) until {@code condition} holds; fails after {@code bound}. */
    static void awaitTrue(String what, Duration bound, BooleanSupplier condition) {
        long deadline = System.nanoTime() + bound.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + bound + " waiting until " + what);
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
