package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * What every scenario shares in one run: the database, the profile, progress output, the server-side statement
 * counter, and the schemas it creates (one per scenario and mode, dropped at the end).
 */
final class BenchContext {
    private final String url;
    private final Profile profile;
    private final Progress progress;
    private final ServerStatementCounter counter;
    private final String runId;
    private final Set<String> schemas = new LinkedHashSet<>();
    private WaitEventSampler waits;
    private UnitCosts costs;

    BenchContext(String url, Profile profile, Progress progress, ServerStatementCounter counter, String runId) {
        this.url = url;
        this.profile = profile;
        this.progress = progress;
        this.counter = counter;
        this.runId = runId;
    }

    String url() {
        return url;
    }

    Profile profile() {
        return profile;
    }

    Progress progress() {
        return progress;
    }

    ServerStatementCounter counter() {
        return counter;
    }

    /** What measurement windows read their costs from (located on first use). */
    synchronized UnitCosts costs() {
        if (costs == null) {
            costs = UnitCosts.locate(counter);
        }
        return costs;
    }

    /** The wait-event sampler measurement windows share (one connection, opened on first use). */
    synchronized WaitEventSampler waits() throws SQLException {
        if (waits == null) {
            waits = new WaitEventSampler(url, 50);
        }
        return waits;
    }

    /** Closes the shared sampler. */
    synchronized void closeWaits() {
        if (waits != null) {
            waits.close();
            waits = null;
        }
    }

    /** The schema of one scenario (and part) in one mode; the same name for the whole run. */
    String schema(String scenario, Mode mode) {
        String s = ("pgdb_" + runId + "_" + scenario + "_" + mode.key()).toLowerCase(Locale.ROOT)
                .replaceAll("[^a-z0-9_]", "_");
        schemas.add(s);
        return s;
    }

    /** A provider for {@code mode} on the scenario's schema (created and migrated on first use). */
    Hub hub(String scenario, Mode mode, int poolSize) {
        return Hub.open(url, schema(scenario, mode), mode, poolSize);
    }

    /** As {@link #hub(String, Mode, int)}, with extra provider configuration. */
    Hub hub(String scenario, Mode mode, int poolSize,
            java.util.function.UnaryOperator<io.pgdurable.postgres.PostgresProviderConfig.Builder> tune) {
        return Hub.open(url, schema(scenario, mode), mode, poolSize, tune);
    }

    /** Drops every schema this run created; returns the ones that could not be dropped. */
    List<String> dropSchemas() {
        List<String> failed = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
            for (String s : schemas) {
                try {
                    st.execute("DROP SCHEMA IF EXISTS " + Identifiers.quote(s) + " CASCADE");
                } catch (SQLException e) {
                    failed.add(s);
                }
            }
        } catch (SQLException e) {
            failed.addAll(schemas);
        }
        return failed;
    }
}
