package io.pgdurable.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The PostgreSQL server: version and the settings that shape these figures (durability, memory, connections). */
final class ServerInfo {
    static final List<String> SETTINGS = List.of("server_version", "max_connections", "shared_buffers",
            "effective_cache_size", "work_mem", "synchronous_commit", "fsync", "wal_sync_method", "full_page_writes",
            "wal_level", "max_wal_size", "checkpoint_timeout", "commit_delay", "shared_preload_libraries",
            "track_io_timing", "jit", "max_notify_queue_pages", "autovacuum");

    private ServerInfo() {}

    static Map<String, Object> describe(String url) throws SQLException {
        Map<String, Object> m = new LinkedHashMap<>();
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT version(), current_setting('server_version_num')::int, current_database(), "
                            + "(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            + "AND pid <> pg_backend_pid())")) {
                rs.next();
                m.put("version", rs.getString(1));
                m.put("versionNum", rs.getInt(2));
                m.put("database", rs.getString(3));
                m.put("otherSessionsAtStart", rs.getLong(4));
            }
            Map<String, Object> settings = new LinkedHashMap<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY (?) ORDER BY name")) {
                ps.setArray(1, c.createArrayOf("text", SETTINGS.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        settings.put(rs.getString(1), rs.getString(2));
                    }
                }
            }
            m.put("settings", settings);
        }
        return m;
    }
}
