package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Every row of a task hub's tables, each table read in the order of all its columns: two snapshots are equal exactly
 * when nothing stored changed in between. {@code parked_fetches} is left out: it is the live account of long-polling
 * fetches (written as worker streams come and go), not stored state of the hub.
 */
final class SchemaRows {
    private static final Set<String> NOT_STATE = Set.of("parked_fetches");

    private final Map<String, List<String>> rows;

    private SchemaRows(Map<String, List<String>> rows) {
        this.rows = rows;
    }

    static SchemaRows of(String schema) {
        Map<String, List<String>> rows = new LinkedHashMap<>();
        try (Connection c = TestDatabase.connect()) {
            for (String table : tables(c, schema)) {
                rows.put(table, dump(c, schema, table));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not read the rows of schema " + schema, e);
        }
        return new SchemaRows(rows);
    }

    int tableCount() {
        return rows.size();
    }

    int rowCount() {
        return rows.values().stream().mapToInt(List::size).sum();
    }

    /** Fails naming the first table whose rows differ from {@code before}'s. */
    void assertUnchangedSince(SchemaRows before, String what) {
        if (before.rows.equals(rows)) {
            return;
        }
        for (String table : rows.keySet()) {
            List<String> was = before.rows.getOrDefault(table, List.of());
            List<String> now = rows.get(table);
            if (!Objects.equals(was, now)) {
                List<String> added = new ArrayList<>(now);
                added.removeAll(was);
                List<String> removed = new ArrayList<>(was);
                removed.removeAll(now);
                fail(what + " changed table " + table + ": rows gone " + cut(removed) + ", rows new " + cut(added));
            }
        }
        fail(what + " changed the set of tables: " + before.rows.keySet() + " -> " + rows.keySet());
    }

    private static String cut(List<String> rows) {
        String s = rows.toString();
        return s.length() <= 600 ? s : s.substring(0, 600) + "...";
    }

    private static List<String> tables(Connection c, String schema) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT tablename FROM pg_tables WHERE schemaname = ? ORDER BY tablename")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (!NOT_STATE.contains(rs.getString(1))) {
                        out.add(rs.getString(1));
                    }
                }
            }
        }
        if (out.isEmpty()) {
            throw new IllegalStateException("schema " + schema + " has no tables");
        }
        return out;
    }

    private static List<String> dump(Connection c, String schema, String table) throws SQLException {
        String name = quote(schema) + "." + quote(table);
        int columns;
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM " + name + " LIMIT 0")) {
            columns = rs.getMetaData().getColumnCount();
        }
        StringBuilder order = new StringBuilder();
        for (int i = 1; i <= columns; i++) {
            order.append(i == 1 ? "" : ", ").append(i);
        }
        List<String> out = new ArrayList<>();
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT * FROM " + name + " ORDER BY " + order)) {
            while (rs.next()) {
                StringBuilder row = new StringBuilder("(");
                for (int i = 1; i <= columns; i++) {
                    row.append(i == 1 ? "" : ", ").append(rs.getString(i));
                }
                out.add(row.append(')').toString());
            }
        }
        return out;
    }

    private static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }
}
