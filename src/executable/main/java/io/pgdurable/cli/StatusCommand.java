package io.pgdurable.cli;

import io.pgdurable.postgres.ClockSkewBounds;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgdurable status}: where a schema stands and how deep its queues are. Read-only: it runs no DDL, so it
 * also works on a schema that does not exist yet.
 */
@Command(name = "status", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = "Show the schema version, pending migrations and queue depths. Runs no DDL.")
final class StatusCommand implements Callable<Integer> {
    private static final int POOL_SIZE = 2;
    /** Clock skew bounds no clock reaches: this command reports the offset and never refuses over it. */
    private static final Duration REPORT_ONLY = Duration.ofDays(3650);

    @Spec
    CommandSpec spec;

    @Mixin
    DatabaseOptions options;

    @Option(names = "--json", description = "Print one JSON object on stdout instead of text (notices go to "
            + "stderr).")
    boolean json;

    @Override
    public Integer call() {
        options.validate(spec);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        // With --json stdout carries exactly one JSON object, so notices go to stderr.
        PrintWriter notices = json ? err : out;
        try (Database db = Database.open(options, "status", notices, err)) {
            DataSource ds = db.pool(POOL_SIZE);
            // Status takes no lease, so its provider never refuses to start over its clock: it reports the offset
            // and compares it with the bounds a provider has by default.
            PostgresProviderConfig config = PostgresProviderConfig.builder()
                    .dataSource(ds)
                    .schema(options.schema)
                    .migrationPolicy(MigrationPolicy.VERIFY_ONLY)
                    .clockSkewBounds(new ClockSkewBounds(REPORT_ONLY.minusDays(1), REPORT_ONLY,
                            ClockSkewBounds.DEFAULT.checkInterval()))
                    .build();
            SchemaMigrator.Status status = new SchemaMigrator(ds, config).status();
            Depths depths = depths(status, config);
            if (json) {
                out.println(Json.write(toJson(db, status, depths)));
            } else {
                printText(out, db, status, depths);
            }
            out.flush();
            notices.flush();
            return 0;
        } catch (ProviderException e) {
            return PgDurableCli.fail(err, e);
        }
    }

    /** Queue depths, or why there are none: they are read through the provider only on an up-to-date schema. */
    private record Depths(ProviderAdmin.QueueDepths depths, String unavailable, Boolean activated,
                          SchemaMigrator.NotifyTriggers triggers, Duration clockOffset) {}

    private static Depths depths(SchemaMigrator.Status status, PostgresProviderConfig config) {
        if (!status.ledgerExists()) {
            return new Depths(null, "schema not migrated", null, null, null);
        }
        if (!status.upToDate()) {
            return new Depths(null, "schema not at this tool's version", null, null, null);
        }
        // VERIFY_ONLY: the provider checks the schema and runs no DDL; it borrows the command's pool.
        SchemaMigrator migrator = new SchemaMigrator(config.dataSource(), config);
        boolean activated = migrator.activated();
        SchemaMigrator.NotifyTriggers triggers = migrator.notifyTriggers();
        try (PostgresProvider provider = PostgresProvider.create(config)) {
            Duration offset = provider.clockOffset().orElse(null);
            Optional<ProviderAdmin> admin = provider.asManagementCapability();
            if (admin.isEmpty()) {
                return new Depths(null, "the provider offers no management capability", activated, triggers,
                        offset);
            }
            return new Depths(admin.get().getQueueDepths(), null, activated, triggers, offset);
        }
    }

    private static String state(SchemaMigrator.Status s) {
        if (!s.ledgerExists()) {
            return "missing or not migrated (no pgdurable migration ledger)";
        }
        if (!s.failed().isEmpty()) {
            return "has failed migrations: repair it before use";
        }
        if (s.preRelease()) {
            return "created by a pre-release build of pgdurable: re-create it (docs/operations.md)";
        }
        if (!s.unknownApplied().isEmpty()) {
            return "ahead of this tool (" + Version.tool() + "): upgrade pgdurable";
        }
        if (!s.pending().isEmpty()) {
            return "behind: " + s.pending().size() + " pending migration(s); run `migrate`";
        }
        return "up to date";
    }

    private static void printText(PrintWriter out, Database db, SchemaMigrator.Status s, Depths d) {
        out.println("database:     " + db.displayUrl() + (db.embedded() ? " (" + db.embeddedDescription() + ")"
                : ""));
        out.println("schema:       " + s.schema() + ": " + state(s));
        out.println("version:      " + Text.version(s));
        out.println("pending:      " + Text.list(s.pending()) + (!s.ledgerExists() && !s.pending().isEmpty()
                ? " (all)" : ""));
        if (!s.unknownApplied().isEmpty() && !s.preRelease()) {
            out.println("ahead:        " + Text.list(s.unknownApplied()) + " (applied, unknown to this tool)");
        }
        if (!s.failed().isEmpty()) {
            out.println("failed:       " + Text.list(s.failed()));
        }
        if (d.activated() != null) {
            out.println("long polling: " + (d.activated() ? "activated (providers announce their writes)"
                    : "not activated (run `activate` to enable LISTEN/NOTIFY long polling)"));
        }
        if (d.triggers() != null) {
            out.println("notify triggers: " + d.triggers().describe()
                    + (d.triggers().allEnabled() ? " (every other writer's commit wakes parked fetches)" : ""));
        }
        out.println("clock offset: " + clockOffset(d));
        if (d.depths() != null) {
            out.println("queue depths: orchestrator " + d.depths().orchestratorQueue() + ", worker "
                    + d.depths().workerQueue());
        } else {
            out.println("queue depths: n/a (" + d.unavailable() + ")");
        }
    }

    /**
     * This machine's clock against the server's, judged by the bounds a provider has by default: what a provider
     * started here with the system clock would do.
     */
    private static String clockOffset(Depths d) {
        Duration offset = d.clockOffset();
        if (offset == null) {
            return "n/a (" + (d.unavailable() != null ? d.unavailable() : "not measured") + ")";
        }
        double ms = offset.toNanos() / 1e6;
        Duration size = offset.abs();
        ClockSkewBounds bounds = ClockSkewBounds.DEFAULT;
        String verdict = size.compareTo(bounds.limit()) > 0
                ? "past the default clock skew limit (" + bounds.limit().toMillis()
                        + " ms): a provider here takes no lease and does not start; synchronise the clock"
                : size.compareTo(bounds.warning()) > 0
                ? "past the default clock skew warning (" + bounds.warning().toMillis() + " ms); synchronise the clock"
                : "within the default bounds";
        return String.format(Locale.ROOT, "%+.1f ms (this machine's clock minus the server's; %s)", ms, verdict);
    }

    private static Map<String, Object> toJson(Database db, SchemaMigrator.Status s, Depths d) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tool", Version.tool());
        m.put("database", db.displayUrl());
        m.put("embedded", db.embedded());
        m.put("dataDirectory", db.dataDirectory() == null ? null : db.dataDirectory().toString());
        m.put("schema", s.schema());
        m.put("migrated", s.ledgerExists());
        m.put("upToDate", s.upToDate());
        m.put("state", state(s));
        m.put("currentVersion", s.currentVersion());
        m.put("pending", s.pending());
        m.put("unknownApplied", s.unknownApplied());
        m.put("failed", s.failed());
        m.put("longPollingActivated", d.activated());
        if (d.triggers() != null) {
            Map<String, Object> triggers = new LinkedHashMap<>();
            triggers.put("enabled", d.triggers().enabled());
            triggers.put("total", d.triggers().total());
            m.put("notifyTriggers", triggers);
        } else {
            m.put("notifyTriggers", null);
        }
        m.put("clockOffsetMs", d.clockOffset() == null ? null
                : BigDecimal.valueOf(d.clockOffset().toNanos(), 6).setScale(3, RoundingMode.HALF_UP));
        if (d.depths() != null) {
            Map<String, Object> depths = new LinkedHashMap<>();
            depths.put("orchestrator", d.depths().orchestratorQueue());
            depths.put("worker", d.depths().workerQueue());
            m.put("queueDepths", depths);
        } else {
            m.put("queueDepths", null);
            m.put("queueDepthsUnavailable", d.unavailable());
        }
        return m;
    }
}
