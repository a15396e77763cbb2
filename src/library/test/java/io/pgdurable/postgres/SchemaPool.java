package io.pgdurable.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Migrated test schemas handed from one conformance test to the next, emptied in between.
 *
 * <p>Why: migrating a schema (about a hundred functions, with their tables and indexes) and dropping it again cost the server
 * about a second of CPU, and the conformance modules do that once per test, well over a thousand times per suite
 * on two cores. Emptying the tables of a schema a test has finished with costs a few milliseconds.
 *
 * <p>A schema is only reused when it is indistinguishable from a freshly prepared one apart from its rows: its
 * catalog (tables, columns, indexes, constraints, functions and their bodies, triggers and whether they fire, owner
 * and grants), its migration ledger and its {@code hub_settings} rows must hash to what the first schema of the same
 * kind hashed to right after its first provider opened it. Anything else (a test that deactivated long polling,
 * changed a setting, altered a table, or a schema a connection still locks) is dropped as before. Then every table
 * but the ledger and the settings is emptied and its identity sequences restarted, so the next test starts on
 * empty storage exactly as the conformance contract's "fresh provider on its own empty storage" requires.
 *
 * <p>{@code -Dpgdurable.test.schemaPool=false} turns reuse off (every test migrates a schema of its own).
 */
public final class SchemaPool {
    private static final Logger LOG = LoggerFactory.getLogger(SchemaPool.class);
    private static final boolean ENABLED = !"false".equalsIgnoreCase(System.getProperty("pgdurable.test.schemaPool"));
    /** Per kind; more finished schemas than this (only when more tests than this ran at once) are dropped. */
    private static final int MAX_IDLE = 12;

    private static final Map<String, Deque<String>> IDLE = new ConcurrentHashMap<>();
    private static final Map<String, String> REFERENCE = new ConcurrentHashMap<>();
    private static final AtomicInteger REUSED = new AtomicInteger();
    private static final AtomicInteger DROPPED_CHANGED = new AtomicInteger();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(SchemaPool::dropIdle, "schema-pool-drop"));
    }

    private SchemaPool() {}

    /** The kind of the schemas a superuser's provider with this configuration starts on (see the factory). */
    public static String kindOf(PostgresProviderConfig config) {
        return "superuser" + (config.longPolling() ? ":activated" : ":plain");
    }

    /** An emptied schema of this kind, or null when none is idle (the caller prepares a fresh one). */
    public static String take(String kind) {
        if (!ENABLED) {
            return null;
        }
        Deque<String> idle = IDLE.get(kind);
        String schema = idle == null ? null : idle.pollFirst();
        if (schema != null) {
            REUSED.incrementAndGet();
        }
        return schema;
    }

    /** Records what a fresh schema of this kind looks like, once per kind, right after its first provider opened. */
    public static void noteFresh(String kind, String schema) {
        if (ENABLED && !REFERENCE.containsKey(kind)) {
            try {
                REFERENCE.putIfAbsent(kind, fingerprint(schema));
            } catch (SQLException e) {
                // Not fatal (every test of the kind then migrates a schema of its own) but a bug to fix: say so.
                LOG.warn("schema pool: cannot fingerprint schema {}, so {} schemas are not reused: {}", schema, kind,
                        e.getMessage());
            }
        }
    }

    /**
     * Takes a schema whose providers are all closed: empties it and keeps it for the next test when its catalog is
     * still that of a fresh schema of its kind, drops it otherwise.
     */
    public static void release(String kind, String schema) {
        if (ENABLED && reusable(kind, schema)) {
            Deque<String> idle = IDLE.computeIfAbsent(kind, k -> new ConcurrentLinkedDeque<>());
            if (idle.size() < MAX_IDLE) {
                idle.addLast(schema);
                return;
            }
        }
        TestDatabase.dropSchema(schema);
    }

    private static boolean reusable(String kind, String schema) {
        String reference = REFERENCE.get(kind);
        if (reference == null) {
            return false;
        }
        try {
            return TestDatabase.withMaintenanceConnection(c -> {
                if (!reference.equals(fingerprint(c, schema))) {
                    DROPPED_CHANGED.incrementAndGet();
                    return false;
                }
                empty(c, schema, CONTENTS.computeIfAbsent(kind, k -> contentsOf(c, schema)));
                return true;
            });
        } catch (SQLException | IllegalStateException e) {
            LOG.debug("schema pool: {} not reused: {}", schema, e.getMessage());
            return false;
        }
    }

    /** What emptying a schema of one kind deletes and restarts; alike for every schema of the kind (same hash). */
    private record Contents(List<String> tables, List<String> sequences) {}

    private static final Map<String, Contents> CONTENTS = new ConcurrentHashMap<>();

    private static Contents contentsOf(Connection c, String schema) {
        try (PreparedStatement tables = c.prepareStatement("SELECT c.relname FROM pg_class c "
                + "JOIN pg_namespace n ON n.oid = c.relnamespace "
                + "WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND c.relname NOT IN (?, 'hub_settings') "
                + "ORDER BY c.relname");
             // The sequences TRUNCATE ... RESTART IDENTITY would restart: those owned by a column of those tables.
             PreparedStatement sequences = c.prepareStatement("SELECT s.relname FROM pg_class s "
                + "JOIN pg_namespace n ON n.oid = s.relnamespace "
                + "JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid "
                + " AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') "
                + "JOIN pg_class t ON t.oid = d.refobjid "
                + "WHERE n.nspname = ? AND s.relkind = 'S' AND t.relname NOT IN (?, 'hub_settings') "
                + "ORDER BY s.relname")) {
            return new Contents(names(tables, schema), names(sequences, schema));
        } catch (SQLException e) {
            throw new IllegalStateException("cannot list the tables of schema " + schema, e);
        }
    }

    private static List<String> names(PreparedStatement ps, String schema) throws SQLException {
        ps.setString(1, schema);
        ps.setString(2, SchemaMigrator.LEDGER_TABLE);
        List<String> names = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        return names;
    }

    /**
     * Deletes every row and restarts the identity sequences, in one transaction, as TRUNCATE ... RESTART IDENTITY
     * would, but without TRUNCATE's cost: it gives every table and index a new file and rewrites their catalog rows,
     * which broadcasts cache invalidations to every backend (measured under the suite's load: 70-94 ms for the
     * eleven tables, against about 5 ms for the deletes). Triggers are skipped (replica role: no notifications from a
     * schema nobody listens to, no foreign-key checks between tables that all end up empty).
     */
    private static void empty(Connection c, String schema, Contents contents) throws SQLException {
        String q = Identifiers.quote(schema);
        c.setAutoCommit(false);
        try (Statement st = c.createStatement();
             PreparedStatement restart = c.prepareStatement(
                     "SELECT count(setval(s.seqrelid::regclass, s.seqstart, false)) FROM pg_sequence s "
                             + "WHERE s.seqrelid IN (SELECT format('%I.%I', ?::text, n)::regclass "
                             + "FROM unnest(?::text[]) AS n)")) {
            // A provider of the finished test that still held a lock would make a delete wait; give up instead.
            st.execute("SET LOCAL lock_timeout = '2s'");
            st.execute("SET LOCAL session_replication_role = replica");
            for (String table : contents.tables()) {
                // Names come from the catalog and are quoted; nothing here comes from a test's values.
                st.execute("DELETE FROM " + q + "." + Identifiers.quote(table));
            }
            if (!contents.sequences().isEmpty()) {
                restart.setString(1, schema);
                restart.setArray(2, c.createArrayOf("text", contents.sequences().toArray()));
                restart.execute();
            }
            c.commit();
        } catch (SQLException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    static String fingerprint(String schema) throws SQLException {
        return TestDatabase.withMaintenanceConnection(c -> fingerprint(c, schema));
    }

    /**
     * One hash over the schema's catalog, ledger and settings, with the schema's own name taken out (it is part of
     * qualified names, function bodies and the notify channel) so any two fresh schemas of one kind hash alike, not
     * only a schema and its own earlier state.
     */
    private static String fingerprint(Connection c, String schema) throws SQLException {
        String q = Identifiers.quote(schema);
        String sql = "WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname = ?), items(x) AS ("
                + " SELECT 'n:' || n.nspowner::regrole::text || ':' || COALESCE(n.nspacl::text, '')"
                + "   FROM pg_namespace n WHERE n.oid = (SELECT oid FROM ns)"
                + " UNION ALL SELECT 'c:' || c.relname || ':' || c.relkind::text || ':'"
                + "   || c.relowner::regrole::text || ':'"
                + "   || COALESCE(c.relacl::text, '') || ':' || COALESCE(pg_get_indexdef(c.oid), '')"
                + "   FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM ns)"
                + " UNION ALL SELECT 'a:' || c.relname || ':' || a.attnum::text || ':' || a.attname || ':'"
                + "   || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull::text || ':'"
                + "   || a.attidentity::text || ':'"
                + "   || COALESCE(pg_get_expr(d.adbin, d.adrelid), '')"
                + "   FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
                + "   LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                + "   WHERE c.relnamespace = (SELECT oid FROM ns) AND a.attnum > 0 AND NOT a.attisdropped"
                + " UNION ALL SELECT 'k:' || conname || ':' || pg_get_constraintdef(oid)"
                + "   FROM pg_constraint WHERE connamespace = (SELECT oid FROM ns)"
                + " UNION ALL SELECT 'p:' || p.oid::regprocedure::text || ':' || ':'"
                + "   || md5(replace(p.prosrc, (SELECT nspname FROM ns), '@')) || ':'"
                + "   || p.proowner::regrole::text"
                + "   || ':' || COALESCE(p.proacl::text, '') || ':' || COALESCE(array_to_string(p.proconfig, ','), '')"
                + "   || ':' || p.prosecdef::text FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM ns)"
                + " UNION ALL SELECT 't:' || c.relname || ':' || t.tgname || ':' || t.tgenabled::text || ':'"
                + "   || pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                + "   WHERE c.relnamespace = (SELECT oid FROM ns)"
                + " UNION ALL SELECT 'y:' || typname FROM pg_type WHERE typnamespace = (SELECT oid FROM ns)"
                + " UNION ALL SELECT 'r:' || polname || ':' || polrelid::regclass::text FROM pg_policy"
                + "   WHERE polrelid IN (SELECT oid FROM pg_class WHERE relnamespace = (SELECT oid FROM ns))"
                + " UNION ALL SELECT 'h:' || name || '=' || value FROM " + q + ".hub_settings"
                + " UNION ALL SELECT 'l:' || installed_rank::text || ':' || COALESCE(version, '') || ':'"
                + "   || COALESCE(checksum::text, '') || ':' || success::text"
                + "   FROM " + q + "." + SchemaMigrator.LEDGER_TABLE
                + "), named(y) AS (SELECT replace(x, ?, '@') FROM items)"
                + " SELECT count(*) || ':' || md5(string_agg(y, E'\\n' ORDER BY y)) FROM named";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, schema);
            ps.setString(2, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    private static void dropIdle() {
        for (Deque<String> idle : IDLE.values()) {
            String s;
            while ((s = idle.pollFirst()) != null) {
                try {
                    TestDatabase.dropSchema(s);
                } catch (RuntimeException e) {
                    return; // the server (an embedded one) may already be stopping
                }
            }
        }
        if (REUSED.get() > 0 || DROPPED_CHANGED.get() > 0) {
            LOG.info("schema pool: {} schemas reused, {} dropped because their test changed them", REUSED.get(),
                    DROPPED_CHANGED.get());
        }
    }
}
