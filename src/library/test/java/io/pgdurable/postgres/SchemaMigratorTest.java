package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SchemaMigratorTest {
    /** The newest migration bundled in migrations/. */
    private static final String LATEST = "2";
    /**
     * Released migrations are frozen (docs/schema.md): each one's checksum as its ledger row records it, pinned at
     * its release. A schema whose migration no longer matches is refused, so a change goes into a new migration.
     */
    private static final Map<String, Integer> RELEASED = Map.of("1", -1343465424);
    /** The ledger a build from before 0.1.0 left behind: its 21 migrations (version, description, checksum). */
    private static final List<Object[]> PRE_RELEASE_LEDGER = List.of(
            new Object[] {1, "tables", 1414397199}, new Object[] {2, "queue functions", -192196070},
            new Object[] {3, "admin functions", -1184902405}, new Object[] {4, "notify triggers", -1053282021},
            new Object[] {5, "long poll scans", 756201972}, new Object[] {6, "batching", -743715956},
            new Object[] {7, "provider announcements", 519026479}, new Object[] {8, "notify triggers", -1523126448},
            new Object[] {9, "sql api", -2076696331}, new Object[] {10, "ack and fetch", 273570769},
            new Object[] {11, "unleased claims", 263472353}, new Object[] {12, "purge keeping children", 679519498},
            new Object[] {13, "hand over", -313196896}, new Object[] {14, "orchestrator hand over", -1272362862},
            new Object[] {15, "hand over across processes", -1720738748},
            new Object[] {16, "batched ack answers", -1277873927}, new Object[] {17, "row naming tokens", 1008529768},
            new Object[] {18, "row versions and token parsing", -1088770711},
            new Object[] {19, "orchestrator claim generic plans", 1163342247},
            new Object[] {20, "paged instance listing", 88120457}, new Object[] {21, "claim ahead", -1526757097});
    private final List<String> schemas = new ArrayList<>();

    private String schema() {
        String s = TestDatabase.newSchemaName("mig");
        schemas.add(s);
        return s;
    }

    @AfterEach
    void dropSchemas() {
        schemas.forEach(TestDatabase::dropSchema);
    }

    /** How many migrations migrations/ holds (versions need not be contiguous). */
    private static long bundledMigrations() throws java.io.IOException {
        try (var files = java.nio.file.Files.list(java.nio.file.Path.of("migrations"))) {
            return files.filter(f -> f.getFileName().toString().matches("V\\d+__.*\\.sql")).count();
        }
    }

    @Test
    void apply_all_creates_the_schema_and_records_every_migration() {
        String schema = schema();
        try (PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema).build())) {
            p.enqueueForOrchestrator(new WorkItem.StartOrchestration("i1", "O", "{}", "1.0.0"), null);
        }
        SchemaMigrator.Status status = status(schema);
        assertTrue(status.upToDate(), status.toString());
        assertEquals(LATEST, status.currentVersion());
    }

    @Test
    void eight_providers_starting_at_once_on_an_empty_schema_share_one_ledger() throws Exception {
        String schema = schema();
        int n = 8;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<PostgresProvider>> started = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                started.add(pool.submit(() -> {
                    go.await();
                    // The subject is one consistent ledger, not the lock budget: give a loaded CI machine room.
                    return PostgresProvider.create(TestDatabase.config(schema).poolSize(2)
                            .migrationLockBudget(Duration.ofSeconds(60)).build());
                }));
            }
            go.countDown();
            for (Future<PostgresProvider> f : started) {
                f.get(60, TimeUnit.SECONDS).close();
            }
        } finally {
            pool.shutdownNow();
        }
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT version, count(*), bool_and(success) FROM "
                     + Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE
                     + " WHERE version IS NOT NULL GROUP BY version ORDER BY min(installed_rank)")) {
            List<String> versions = new ArrayList<>();
            while (rs.next()) {
                assertEquals(1, rs.getInt(2), "version " + rs.getString(1) + " recorded once");
                assertTrue(rs.getBoolean(3), "version " + rs.getString(1) + " succeeded");
                versions.add(rs.getString(1));
            }
            assertEquals(LATEST, versions.get(versions.size() - 1), versions.toString());
            assertEquals(bundledMigrations(), versions.stream().filter(v -> !v.equals("0")).count());
        }
        assertNoAdvisoryLockHeld(schema);
    }

    @Test
    void verify_only_refuses_a_missing_schema_without_creating_anything() throws SQLException {
        String schema = schema();
        ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                TestDatabase.config(schema).migrationPolicy(MigrationPolicy.VERIFY_ONLY).build()));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("missing or was never migrated"), e.getMessage());
        assertFalse(schemaExists(schema), "VERIFY_ONLY must run no DDL");
    }

    @Test
    void verify_only_refuses_a_schema_that_is_behind() throws SQLException {
        String schema = schema();
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        execute("DELETE FROM " + Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE + " WHERE version = '" + LATEST + "'");
        ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                TestDatabase.config(schema).migrationPolicy(MigrationPolicy.VERIFY_ONLY).build()));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("is behind"), e.getMessage());
        assertTrue(e.getMessage().contains("[" + LATEST + "]"), e.getMessage());
    }

    @Test
    void verify_only_refuses_a_schema_that_is_ahead() throws SQLException {
        String schema = schema();
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        execute("INSERT INTO " + Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE
                + " (installed_rank, version, description, type, script, checksum, installed_by, execution_time, success)"
                + " VALUES (99, '99', 'from the future', 'SQL', 'V99__future.sql', 0, 'test', 0, true)");
        ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                TestDatabase.config(schema).migrationPolicy(MigrationPolicy.VERIFY_ONLY).build()));
        assertFalse(e.retryable());
        assertTrue(e.getMessage().contains("ahead"), e.getMessage());
    }

    @Test
    void verify_only_accepts_a_current_schema() {
        String schema = schema();
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        try (PostgresProvider p = PostgresProvider.create(
                TestDatabase.config(schema).migrationPolicy(MigrationPolicy.VERIFY_ONLY).build())) {
            p.enqueueForOrchestrator(new WorkItem.StartOrchestration("i1", "O", "{}", "1.0.0"), null);
            assertTrue(p.fetchOrchestrationItem(Duration.ofSeconds(5), Duration.ZERO, null).isPresent());
        }
    }

    @Test
    void a_failed_migration_rolls_back_and_keeps_the_database_error() throws SQLException {
        String schema = schema();
        PostgresProviderConfig config = TestDatabase.config(schema).build();
        try (HikariDataSource ds = pool(config)) {
            SchemaMigrator broken = new SchemaMigrator(ds, config, SchemaMigrator.LOCATION,
                    "classpath:io/pgdurable/broken_migrations");
            ProviderException e = assertThrows(ProviderException.class, broken::applyAll);
            assertEquals("22012", e.sqlState().orElse(null), e.getMessage());
            assertTrue(e.getMessage().contains("division by zero"), e.getMessage());
            assertFalse(e.retryable());
            assertEquals(LATEST, new SchemaMigrator(ds, config).status().currentVersion(), "ledger stays at latest");
        }
        assertFalse(tableExists(schema, "created_before_failure"), "the failed migration's DDL rolled back");
        assertNoAdvisoryLockHeld(schema);
    }

    @Test
    void released_migrations_are_frozen() throws SQLException {
        String schema = schema();
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        for (Map.Entry<String, Integer> released : RELEASED.entrySet()) {
            try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement("SELECT checksum FROM "
                    + Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE + " WHERE version = ?")) {
                ps.setString(1, released.getKey());
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next(), "migration " + released.getKey() + " applied");
                    assertEquals(released.getValue(), rs.getInt(1), "migration V" + released.getKey() + " is not the "
                            + "one released: released migrations are frozen (a schema that applied the released one "
                            + "would be refused), so revert the change and make it a new migration");
                }
            }
        }
    }

    @Test
    void a_schema_created_by_a_pre_release_build_is_refused_by_both_policies_and_left_as_it_is() throws SQLException {
        String schema = schema();
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        String ledger = Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE;
        execute("DELETE FROM " + ledger + " WHERE version IS NOT NULL");
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement("INSERT INTO " + ledger
                + " (installed_rank, version, description, type, script, checksum, installed_by, execution_time,"
                + " success) VALUES (?, ?, ?, 'SQL', ?, ?, 'postgres', 10, true)")) {
            for (Object[] m : PRE_RELEASE_LEDGER) {
                ps.setInt(1, (Integer) m[0]);
                ps.setString(2, m[0].toString());
                ps.setString(3, (String) m[1]);
                ps.setString(4, "V" + m[0] + "__" + ((String) m[1]).replace(' ', '_') + ".sql");
                ps.setInt(5, (Integer) m[2]);
                ps.execute();
            }
        }
        String before = ledgerRows(schema);

        for (MigrationPolicy policy : MigrationPolicy.values()) {
            ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                    TestDatabase.config(schema).migrationPolicy(policy).build()), policy.toString());
            assertFalse(e.retryable(), e.getMessage());
            assertTrue(e.getMessage().contains("schema '" + schema + "' was created by a pre-release build of "
                    + "pgdurable"), e.getMessage());
            assertTrue(e.getMessage().contains("up to version 21"), e.getMessage());
            assertTrue(e.getMessage().contains("drop the schema and let a provider with APPLY_ALL create it again, "
                    + "or run `pgdurable migrate` into a new schema"), e.getMessage());
        }
        SchemaMigrator.Status status = status(schema);
        assertTrue(status.preRelease(), status.toString());
        assertFalse(status.upToDate(), status.toString());
        assertEquals(before, ledgerRows(schema), "the refusals changed nothing");
        assertNoAdvisoryLockHeld(schema);
    }

    @Test
    void a_schema_whose_migration_1_is_not_the_released_baseline_is_refused() throws SQLException {
        String schema = schema();
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        execute("UPDATE " + Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE
                + " SET checksum = checksum + 1 WHERE version = '1'");
        for (MigrationPolicy policy : MigrationPolicy.values()) {
            ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                    TestDatabase.config(schema).migrationPolicy(policy).build()), policy.toString());
            assertFalse(e.retryable(), e.getMessage());
            assertTrue(e.getMessage().contains("was created by a pre-release build"), e.getMessage());
        }
    }

    @Test
    void lock_contention_is_retried_within_the_budget_then_reported_as_retryable() throws Exception {
        String schema = schema();
        try (Connection holder = TestDatabase.connect(); Statement st = holder.createStatement()) {
            st.execute("SELECT pg_advisory_lock(" + SchemaMigrator.lockKey(schema) + ")");
            long start = System.nanoTime();
            ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(
                    TestDatabase.config(schema).migrationLockBudget(Duration.ofMillis(800)).build()));
            long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(e.retryable(), e.getMessage());
            assertTrue(e.getMessage().contains("migration lock"), e.getMessage());
            assertTrue(elapsedMs >= 800, "gave up only after the budget: " + elapsedMs + " ms");
            assertTrue(elapsedMs < 5_000, "gave up soon after the budget: " + elapsedMs + " ms");
            assertFalse(schemaExists(schema), "nothing was applied without the lock");
            st.execute("SELECT pg_advisory_unlock(" + SchemaMigrator.lockKey(schema) + ")");
        }
        PostgresProvider.create(TestDatabase.config(schema).build()).close();
        assertTrue(status(schema).upToDate());
    }

    private static HikariDataSource pool(PostgresProviderConfig config) {
        HikariDataSource ds = new HikariDataSource();
        ds.setJdbcUrl(config.jdbcUrl());
        ds.setMaximumPoolSize(3);
        return ds;
    }

    private static SchemaMigrator.Status status(String schema) {
        PostgresProviderConfig config = TestDatabase.config(schema).build();
        try (HikariDataSource ds = pool(config)) {
            return new SchemaMigrator(ds, config).status();
        }
    }

    private static void assertNoAdvisoryLockHeld(String schema) throws SQLException {
        long key = SchemaMigrator.lockKey(schema);
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                     + "AND ((classid::bigint << 32) | objid::bigint) = ?")) {
            ps.setLong(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertEquals(0, rs.getInt(1), "the migration advisory lock was released");
            }
        }
    }

    private static String ledgerRows(String schema) throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT string_agg(installed_rank || ':' || COALESCE(version, '') || ':'"
                     + " || COALESCE(checksum::text, ''), ',' ORDER BY installed_rank) FROM "
                     + Identifiers.quote(schema) + "." + SchemaMigrator.LEDGER_TABLE)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static boolean schemaExists(String schema) throws SQLException {
        return exists("SELECT 1 FROM pg_namespace WHERE nspname = ?", schema);
    }

    private static boolean tableExists(String schema, String table) throws SQLException {
        return exists("SELECT 1 FROM pg_tables WHERE schemaname = ? AND tablename = '" + table + "'", schema);
    }

    private static boolean exists(String sql, String param) throws SQLException {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, param);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private static void execute(String sql) throws SQLException {
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }
}
