package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationState;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.database.postgresql.PostgreSQLConfigurationExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings a schema to this library's version (APPLY_ALL) or checks that it is there (VERIFY_ONLY).
 *
 * <p>Concurrent starters serialize on a session advisory lock keyed by the schema. Waiting for it uses short
 * server-side lock timeouts with jittered retries inside a bounded budget, so a node that dies while migrating
 * cannot wedge the others and a busy one delays them by at most the budget.
 */
public final class SchemaMigrator {
    private static final Logger LOG = LoggerFactory.getLogger(SchemaMigrator.class);
    static final String LEDGER_TABLE = "pgdurable_schema_history";
    static final String LOCATION = "classpath:io/pgdurable/migrations";
    /** The version of the 0.1.0 baseline, the first migration of every released schema. */
    static final String BASELINE = "1";
    private static final String OPERATION = "migrate";

    private final DataSource dataSource;
    private final String schema;
    private final PostgresProviderConfig config;
    private final String[] locations;

    public SchemaMigrator(DataSource dataSource, PostgresProviderConfig config) {
        this(dataSource, config, LOCATION);
    }

    /** A migrator reading extra locations too (tests use it to add a migration that fails). */
    SchemaMigrator(DataSource dataSource, PostgresProviderConfig config, String... locations) {
        this.dataSource = dataSource;
        this.config = config;
        this.schema = config.schema();
        this.locations = locations.clone();
    }

    /**
     * Where a schema stands relative to the migrations bundled with this library.
     *
     * @param preRelease the ledger records migrations but not this library's baseline as migration 1: a build from
     *                   before 0.1.0 created the schema, and no migration leads from there (see {@link #verify})
     */
    public record Status(String schema, boolean ledgerExists, String currentVersion, List<String> pending,
                         List<String> unknownApplied, List<String> failed, boolean preRelease) {
        public boolean upToDate() {
            return ledgerExists && !preRelease && pending.isEmpty() && unknownApplied.isEmpty() && failed.isEmpty();
        }
    }

    /** Applies every pending migration under the schema's advisory lock. */
    public void applyAll() {
        applyAll(false);
    }

    /**
     * Applies every pending migration and then, when {@code activate} is set, {@link #activate activates} long
     * polling unless the schema is fully activated already, both under one hold of the schema's advisory lock and
     * with the checks on the lock's own connection: what a provider with long polling does at every start, in two
     * server connections (the lock's and Flyway's) where separate calls took four.
     */
    public void applyAll(boolean activate) {
        Connection lockConnection = acquireLockConnection();
        boolean released = false;
        try {
            int applied = migrate();
            if (applied > 0) {
                LOG.info("pgdurable: applied {} migration(s) to schema {}", applied, schema);
            }
            if (activate && !fullyActivated(lockConnection)) {
                setLongPollingLocked(lockConnection, true);
            }
            released = unlock(lockConnection);
        } catch (FlywayException e) {
            throw translate(e);
        } catch (SQLException e) {
            throw SqlErrors.translate("status", e);
        } finally {
            finish(lockConnection, released);
        }
    }

    /**
     * Activates long polling schema-wide: every provider of the schema announces its committed writes to the
     * others by NOTIFY (providers started earlier pick this up within {@link #ACTIVATION_RECHECK}), and the
     * schema's notify triggers are enabled, so every other writer's commit notifies too.
     */
    public void activate() {
        setLongPolling(true);
    }

    /**
     * Stops the announcements of every provider of the schema and disables the notify triggers (long pollers then
     * rely on their fallback probe).
     */
    public void deactivate() {
        setLongPolling(false);
    }

    /** How often a provider that does not long-poll re-reads the activation setting. */
    public static final java.time.Duration ACTIVATION_RECHECK = java.time.Duration.ofSeconds(30);

    /** How many of the schema's notify triggers are enabled, of how many. */
    public record NotifyTriggers(int enabled, int total) {
        public boolean allEnabled() {
            return total > 0 && enabled == total;
        }

        public String describe() {
            return enabled == 0 ? "disabled (0/" + total + ")" : enabled == total ? "enabled (" + total + "/" + total
                    + ")" : "partly enabled (" + enabled + "/" + total + "): run `activate` or `activate --off`";
        }
    }

    /**
     * The activation setting and the notify triggers, changed in one transaction under the schema's migration lock.
     * Enabling a trigger is DDL that waits for the table's running writes and holds new ones back meanwhile, so each
     * attempt gives up after {@code migrationLockTimeout} per table lock (a deadlock with a writer taking the tables
     * in another order ends the same way) and retries within half of {@code migrationLockBudget}, so nodes waiting
     * for the migration lock meanwhile keep half their budget.
     */
    private void setLongPolling(boolean enabled) {
        Connection c = acquireLockConnection();
        boolean released = false;
        try {
            setLongPollingLocked(c, enabled);
            released = unlock(c);
        } finally {
            finish(c, released);
        }
    }

    /** The attempts of {@link #setLongPolling}, on a connection that holds the migration lock. */
    private void setLongPollingLocked(Connection c, boolean enabled) {
        String op = enabled ? "activate" : "deactivate";
        try {
            long deadline = System.nanoTime() + config.migrationLockBudget().toNanos() / 2;
            while (true) {
                try {
                    setLongPollingOnce(c, enabled);
                    break;
                } catch (SQLException e) {
                    boolean contended = "55P03".equals(e.getSQLState()) || "40P01".equals(e.getSQLState());
                    if (!contended || System.nanoTime() > deadline) {
                        throw SqlErrors.translate(op, e);
                    }
                    TimeUnit.MILLISECONDS.sleep(ThreadLocalRandom.current().nextLong(10, 60));
                }
            }
            LOG.info("pgdurable: long polling of schema {} {}", schema, enabled ? "activated" : "deactivated");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ProviderException.retryable(op, "interrupted while waiting for the tables' locks");
        }
    }

    private void setLongPollingOnce(Connection c, boolean enabled) throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(false);
        try (PreparedStatement timeout = c.prepareStatement("SELECT set_config('lock_timeout', ?, true)");
             PreparedStatement ps = c.prepareStatement(
                     "SELECT " + Identifiers.quote(schema) + ".set_activation(?)")) {
            timeout.setString(1, config.migrationLockTimeout().toMillis() + "ms");
            timeout.execute();
            ps.setBoolean(1, enabled);
            ps.execute();
            c.commit();
        } catch (SQLException e) {
            try {
                c.rollback();
            } catch (SQLException rollbackFailed) {
                e.addSuppressed(rollbackFailed);
            }
            throw e;
        } finally {
            c.setAutoCommit(autoCommit);
        }
    }

    /** Whether long polling is activated on the schema (its providers announce their writes). Reads only. */
    public boolean activated() {
        try (Connection c = dataSource.getConnection()) {
            return activated(c);
        } catch (SQLException e) {
            throw SqlErrors.translate("status", e);
        }
    }

    private boolean activated(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                     "SELECT " + Identifiers.quote(schema) + ".long_polling_activated()");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /** The state of the schema's notify triggers. Reads only. */
    public NotifyTriggers notifyTriggers() {
        try (Connection c = dataSource.getConnection()) {
            return notifyTriggers(c);
        } catch (SQLException e) {
            throw SqlErrors.translate("status", e);
        }
    }

    private NotifyTriggers notifyTriggers(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                     "SELECT enabled, total FROM " + Identifiers.quote(schema) + ".notify_trigger_state()");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new NotifyTriggers(rs.getInt(1), rs.getInt(2));
        }
    }

    /** Activated, with every notify trigger enabled: what activation leaves behind. Reads only. */
    public boolean fullyActivated() {
        try (Connection c = dataSource.getConnection()) {
            return fullyActivated(c);
        } catch (SQLException e) {
            throw SqlErrors.translate("status", e);
        }
    }

    private boolean fullyActivated(Connection c) throws SQLException {
        return activated(c) && notifyTriggers(c).allEnabled();
    }

    /** Fails with a permanent error unless the schema is exactly at this library's version. Runs no DDL. */
    public void verify() {
        Status s = status();
        if (!s.ledgerExists()) {
            throw ProviderException.permanent("verify", "schema '" + schema + "' has no pgdurable migration ledger ("
                    + LEDGER_TABLE + "): it is missing or was never migrated; run `pgdurable migrate` or start a "
                    + "provider with migration policy APPLY_ALL");
        }
        if (s.preRelease()) {
            throw preRelease("verify", s);
        }
        if (!s.failed().isEmpty()) {
            throw ProviderException.permanent("verify", "schema '" + schema + "' records failed migration(s) "
                    + s.failed() + "; repair it before starting");
        }
        if (!s.unknownApplied().isEmpty()) {
            throw ProviderException.permanent("verify", "schema '" + schema + "' is ahead of this library: it has "
                    + "migration(s) " + s.unknownApplied() + " that this version does not know; upgrade the library");
        }
        if (!s.pending().isEmpty()) {
            throw ProviderException.permanent("verify", "schema '" + schema + "' is behind this library (at version "
                    + s.currentVersion() + "); pending migration(s) " + s.pending()
                    + "; run `pgdurable migrate` or use APPLY_ALL");
        }
    }

    /** Reads the ledger; never writes. */
    public Status status() {
        try {
            if (!ledgerExists()) {
                List<String> all = new ArrayList<>();
                for (MigrationInfo i : flyway().info().all()) {
                    all.add(i.getVersion().getVersion());
                }
                return new Status(schema, false, null, all, List.of(), List.of(), false);
            }
            List<String> pending = new ArrayList<>();
            List<String> unknown = new ArrayList<>();
            List<String> failed = new ArrayList<>();
            String current = null;
            boolean anyApplied = false;
            boolean baselineApplied = false;
            for (MigrationInfo i : flyway().info().all()) {
                if (i.getVersion() == null) {
                    continue;
                }
                String v = i.getVersion().getVersion();
                MigrationState state = i.getState();
                if (state.isApplied() && !"0".equals(v)) {
                    anyApplied = true;
                    // The same version is not enough: a pre-release build's migration 1 was another script.
                    baselineApplied |= BASELINE.equals(v) && i.isChecksumMatching() && i.isDescriptionMatching()
                            && i.isTypeMatching();
                }
                if (state == MigrationState.PENDING || state == MigrationState.IGNORED) {
                    pending.add(v);
                } else if (state == MigrationState.FUTURE_SUCCESS || state == MigrationState.FUTURE_FAILED) {
                    unknown.add(v);
                } else if (state.isFailed()) {
                    failed.add(v);
                }
                if (state.isApplied() && !state.isFailed() && !"0".equals(v)) {
                    current = v;
                }
            }
            return new Status(schema, true, current, pending, unknown, failed, anyApplied && !baselineApplied);
        } catch (FlywayException e) {
            throw translate(e);
        }
    }

    /**
     * Applies the pending migrations. Flyway validates the ledger first and refuses a pre-release schema (its
     * migration 1 is another script, or missing below later ones); only then is the ledger read again, so that the
     * refusal says what happened while a start on a released schema pays no extra round trip.
     */
    private int migrate() {
        try {
            return flyway().migrate().migrationsExecuted;
        } catch (FlywayException e) {
            Status s;
            try {
                s = status();
            } catch (ProviderException unreadable) {
                e.addSuppressed(unreadable);
                throw e;
            }
            if (s.preRelease()) {
                throw preRelease(OPERATION, s);
            }
            throw e;
        }
    }

    /** The refusal of a schema that a pre-release build created: permanent, since no migration leads from there. */
    private ProviderException preRelease(String operation, Status s) {
        return ProviderException.permanent(operation, "schema '" + schema + "' was created by a pre-release build "
                + "of pgdurable: its migration ledger (" + LEDGER_TABLE + ", up to version " + s.currentVersion()
                + ") does not start with the 0.1.0 baseline, and no migration leads from a pre-release schema to a "
                + "released one. Re-create it: drop the schema and let a provider with APPLY_ALL create it again, or "
                + "run `pgdurable migrate` into a new schema (docs/operations.md, \"Upgrading from a pre-release "
                + "schema\")");
    }

    private boolean ledgerExists() {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, Identifiers.quote(schema) + "." + LEDGER_TABLE);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw SqlErrors.translate("status", e);
        }
    }

    private Flyway flyway() {
        return configuration().load();
    }

    private FluentConfiguration configuration() {
        var configuration = Flyway.configure(SchemaMigrator.class.getClassLoader())
                .dataSource(dataSource)
                .schemas(schema)
                .defaultSchema(schema)
                .createSchemas(true)
                .table(LEDGER_TABLE)
                .locations(locations)
                .placeholders(Map.of("schema", Identifiers.quote(schema), "schema_name", schema,
                        "channel", io.pgdurable.internal.longpoll.NotifyChannel.forSchema(schema)))
                .validateMigrationNaming(true)
                .cleanDisabled(true)
                .loggers("slf4j");
        // A transactional advisory lock would deadlock CREATE INDEX CONCURRENTLY; we hold our own session lock.
        configuration.getConfigurationExtension(PostgreSQLConfigurationExtension.class).setTransactionalLock(false);
        return configuration;
    }

    /** FNV-1a over "pgdurable:migrations:" + schema: a stable 64-bit advisory lock key per schema. */
    static long lockKey(String schema) {
        long hash = 0xcbf29ce484222325L;
        for (byte b : ("pgdurable:migrations:" + schema).getBytes(StandardCharsets.UTF_8)) {
            hash ^= (b & 0xff);
            hash *= 0x100000001b3L;
        }
        return hash;
    }

    private Connection acquireLockConnection() {
        long deadline = System.nanoTime() + config.migrationLockBudget().toNanos();
        Connection c;
        try {
            c = dataSource.getConnection();
        } catch (SQLException e) {
            throw SqlErrors.translate(OPERATION, e);
        }
        int attempts = 0;
        try (Statement st = c.createStatement()) {
            st.execute("SET lock_timeout = " + config.migrationLockTimeout().toMillis());
            while (true) {
                attempts++;
                try {
                    st.execute("SELECT pg_advisory_lock(" + lockKey(schema) + ")");
                    st.execute("RESET lock_timeout");
                    return c;
                } catch (SQLException e) {
                    if (!"55P03".equals(e.getSQLState())) {
                        throw e;
                    }
                    if (System.nanoTime() > deadline) {
                        throw new ProviderException(OPERATION, "another node held the migration lock of schema '"
                                + schema + "' for the whole " + config.migrationLockBudget().toMillis()
                                + " ms budget (" + attempts + " attempts)", true, "55P03", e);
                    }
                    TimeUnit.MILLISECONDS.sleep(ThreadLocalRandom.current().nextLong(10, 60));
                }
            }
        } catch (SQLException e) {
            closeQuietly(c);
            throw SqlErrors.translate(OPERATION, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeQuietly(c);
            throw ProviderException.retryable(OPERATION, "interrupted while waiting for the migration lock");
        } catch (RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
    }

    private boolean unlock(Connection c) {
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_advisory_unlock(" + lockKey(schema) + ")")) {
            return rs.next() && rs.getBoolean(1);
        } catch (SQLException e) {
            LOG.warn("pgdurable: could not release the migration lock of schema {}: {}", schema, e.getMessage());
            return false;
        }
    }

    /** A connection goes back to the pool only with a confirmed unlock; otherwise it is closed for real. */
    private void finish(Connection c, boolean released) {
        if (released) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // nothing left to do: the connection is gone either way
            }
        } else {
            closeQuietly(c);
        }
    }

    /** Closes the physical connection so the server drops every session lock it held. */
    private void closeQuietly(Connection c) {
        if (dataSource instanceof com.zaxxer.hikari.HikariDataSource hikari) {
            hikari.evictConnection(c);
            return;
        }
        try {
            c.abort(Runnable::run);
        } catch (SQLException | RuntimeException ignored) {
            // fall through to close
        }
        try {
            c.close();
        } catch (SQLException ignored) {
            // already broken
        }
    }

    private static String oneLine(String text) {
        return text == null ? "" : text.replaceAll("\\s+", " ").trim();
    }

    /**
     * A Flyway failure, classified by the database error under it: Flyway wraps the driver's {@link SQLException}
     * in an exception of its own whose message says which migration and statement failed, so that message is kept,
     * and the SQLSTATE decides as everywhere else ({@link SqlErrors}). Without a database error (a validation
     * failure, a missing or misnamed migration) the failure is permanent.
     */
    private ProviderException translate(FlywayException e) {
        Throwable wrapper = e;
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql) {
                String state = sql.getSQLState();
                String account = wrapper instanceof FlywayException ? wrapper.getMessage() : e.getMessage();
                return new ProviderException(OPERATION, "migration of schema '" + schema + "' failed: "
                        + oneLine(account) + (state == null ? "" : " [SQLSTATE " + state + "]"),
                        SqlErrors.isRetryable(sql, state), state, e);
            }
            wrapper = cause;
        }
        return new ProviderException(OPERATION, "migration of schema '" + schema + "' failed: " + oneLine(e.getMessage()),
                false, null, e);
    }
}
