package io.pgdurable.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Counts what the server executed for the benchmark's database, on the server: with {@code pg_stat_statements}
 * (when the library is preloaded) the sum of {@code calls} of every top-level statement, transaction control and
 * {@code SET}/{@code LISTEN} included; otherwise {@code xact_commit + xact_rollback} of {@code pg_stat_database}
 * (every autocommit statement is one transaction, an explicit transaction counts once).
 *
 * <p>Its own reads are left out: statements mentioning {@code pg_stat_statements} or {@code pg_stat_activity}
 * (the wait-event sampler) are excluded, and with {@code pg_stat_database} one transaction per earlier read is
 * subtracted. Everything else on the database counts, so the figures are only meaningful on a database nobody else
 * uses meanwhile. {@code pg_stat_database} is updated by each backend at most once a second (PostgreSQL 15: an idle
 * one within 10 s), so short windows read it with a lag; prefer pg_stat_statements.
 */
public final class ServerStatementCounter implements AutoCloseable {
    /** Where the counts come from. */
    public enum Source {
        PG_STAT_STATEMENTS("pg_stat_statements", "statements"),
        PG_STAT_DATABASE("pg_stat_database", "transactions");

        private final String view;
        private final String unit;

        Source(String view, String unit) {
            this.view = view;
            this.unit = unit;
        }

        public String view() {
            return view;
        }

        /** What one count is: a statement, or a transaction in the fallback. */
        public String unit() {
            return unit;
        }
    }

    private static final String OWN = "query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_activity%'"
            + " AND query NOT LIKE '%pg_stat_bgwriter%' AND query NOT LIKE '%pg_stat_checkpointer%'";
    private static final String DB = "dbid = (SELECT oid FROM pg_database WHERE datname = current_database())";

    private final Connection connection;
    private final Source source;
    private final boolean createdExtension;
    private final String fallbackReason;
    private long reads;

    private ServerStatementCounter(Connection connection, Source source, boolean createdExtension,
                                   String fallbackReason) {
        this.connection = connection;
        this.source = source;
        this.createdExtension = createdExtension;
        this.fallbackReason = fallbackReason;
    }

    /**
     * Connects and picks the source: pg_stat_statements when it is installed or can be (its library preloaded), else
     * pg_stat_database. An extension it had to create is dropped again on {@link #close()}.
     */
    public static ServerStatementCounter open(String url) throws SQLException {
        Connection c = DriverManager.getConnection(url);
        try {
            c.setAutoCommit(true);
            try (Statement st = c.createStatement()) {
                st.execute("SET application_name = 'pgdurable-bench-counter'");
            }
            boolean installed = exists(c, "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'");
            boolean preloaded = preloaded(c);
            boolean created = false;
            String why = null;
            if (!installed && preloaded) {
                try (Statement st = c.createStatement()) {
                    st.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
                    created = true;
                    installed = true;
                } catch (SQLException e) {
                    why = "CREATE EXTENSION pg_stat_statements failed: " + e.getMessage();
                }
            } else if (!preloaded) {
                why = "pg_stat_statements is not in shared_preload_libraries";
            }
            if (installed) {
                try (Statement st = c.createStatement()) {
                    st.executeQuery("SELECT count(*) FROM pg_stat_statements").close();
                    return new ServerStatementCounter(c, Source.PG_STAT_STATEMENTS, created, null);
                } catch (SQLException e) {
                    why = "pg_stat_statements is not readable: " + e.getMessage();
                }
            }
            return new ServerStatementCounter(c, Source.PG_STAT_DATABASE, false, why);
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    private static boolean preloaded(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT current_setting('shared_preload_libraries')")) {
            rs.next();
            String libs = rs.getString(1);
            return libs != null && libs.contains("pg_stat_statements");
        }
    }

    private static boolean exists(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next();
        }
    }

    public Source source() {
        return source;
    }

    /** Why the fallback is used (null with pg_stat_statements). */
    public String fallbackReason() {
        return fallbackReason;
    }

    /** The running total: statements (or transactions) executed on this database so far, own reads left out. */
    public synchronized long total() {
        return source == Source.PG_STAT_STATEMENTS
                ? read("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE " + DB + " AND " + OWN, false)
                : transactions();
    }

    /**
     * Server execution time of every statement on this database so far, in milliseconds (pg_stat_statements'
     * {@code total_exec_time}, own reads left out); NaN without pg_stat_statements.
     */
    public synchronized double execMillis() {
        if (source != Source.PG_STAT_STATEMENTS) {
            return Double.NaN;
        }
        try (Statement st = connection.createStatement();
             ResultSet rs = st.executeQuery("SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements WHERE "
                     + DB + " AND " + OWN)) {
            reads++;
            rs.next();
            return rs.getDouble(1);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read pg_stat_statements: " + e.getMessage(), e);
        }
    }

    /**
     * Transactions committed or rolled back in this database so far ({@code pg_stat_database}), own reads left out.
     * Beside pg_stat_statements it also sees round trips that are no statement there, such as the empty query a
     * connection pool sends to validate a connection.
     */
    public synchronized long transactions() {
        return read("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()",
                true);
    }

    /**
     * The WAL position as a byte count ({@code pg_current_wal_lsn()}), so two readings subtract to the WAL the whole
     * cluster wrote between them.
     */
    public synchronized long walBytes() {
        return read("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint", false);
    }

    /** The process id of the counter's own server backend. */
    public synchronized long backendPid() {
        return read("SELECT pg_backend_pid()", false);
    }

    /** One read; every read is itself one transaction, which {@code ownTransactions} subtracts. */
    private long read(String sql, boolean ownTransactions) {
        try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            long raw = rs.getLong(1);
            long own = ownTransactions ? reads : 0;
            reads++;
            return raw - own;
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the server's statistics: " + e.getMessage(), e);
        }
    }

    /**
     * Checkpoints the server has started so far (timed and requested), or -1 when the view cannot be read. A
     * checkpoint makes the next change of every page write the whole page to WAL and ends with a flush of the data
     * files, so commit latency tails during one are the server's, not the client's.
     */
    public synchronized long checkpoints() {
        String[] queries = {
            "SELECT num_timed + num_requested FROM pg_stat_checkpointer", // PostgreSQL 17 and later
            "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
        };
        for (String sql : queries) {
            reads++; // a transaction on the counted database, answered or failed
            try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(sql)) {
                rs.next();
                return rs.getLong(1);
            } catch (SQLException e) {
                // not this version's view: try the next
            }
        }
        return -1;
    }

    /** Calls per statement text so far (pg_stat_statements only; empty otherwise). */
    public synchronized Map<String, Long> byStatement() {
        Map<String, Long> calls = new HashMap<>();
        if (source != Source.PG_STAT_STATEMENTS) {
            return calls;
        }
        try (Statement st = connection.createStatement();
             ResultSet rs = st.executeQuery("SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 140), calls "
                     + "FROM pg_stat_statements WHERE " + DB + " AND " + OWN)) {
            reads++;
            while (rs.next()) {
                calls.merge(rs.getString(1), rs.getLong(2), Long::sum);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read pg_stat_statements: " + e.getMessage(), e);
        }
        return calls;
    }

    /** The {@code limit} statements called most between two {@link #byStatement()} snapshots. */
    static List<Map<String, Object>> top(Map<String, Long> before, Map<String, Long> after, int limit) {
        List<Map.Entry<String, Long>> delta = new ArrayList<>();
        for (Map.Entry<String, Long> e : after.entrySet()) {
            long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
            if (d > 0) {
                delta.add(Map.entry(e.getKey(), d));
            }
        }
        delta.sort(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()));
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map.Entry<String, Long> e : delta.subList(0, Math.min(limit, delta.size()))) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("calls", e.getValue());
            m.put("statement", e.getKey());
            out.add(m);
        }
        return out;
    }

    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("source", source.view());
        m.put("unit", source.unit());
        m.put("createdExtension", createdExtension);
        if (fallbackReason != null) {
            m.put("fallbackReason", fallbackReason);
        }
        return m;
    }

    @Override
    public synchronized void close() {
        try {
            if (createdExtension) {
                try (Statement st = connection.createStatement()) {
                    st.execute("DROP EXTENSION IF EXISTS pg_stat_statements");
                }
            }
            connection.close();
        } catch (SQLException e) {
            // closing anyway
        }
    }
}
