package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * PostgreSQL's notification commit lock under many writers. A transaction that issued NOTIFY takes one lock, the same
 * for the whole cluster, before its commit record and keeps it until its commit has ended, WAL flush included; every
 * notifying commit of every database therefore waits for the one before it. {@value #SQL_WRITERS} plain-SQL writers
 * (the SQL API's {@code enqueue_activity}, one connection each, autocommit) and {@value #PROVIDERS} providers (one
 * {@code enqueueForWorker} thread each, long polling off) write as fast as they can on one schema whose long-polling
 * provider listens throughout, in two arms: the schema activated (the triggers notify for every SQL write, the
 * providers announce theirs) and deactivated (nothing notifies). Arms run in mirrored order per round; {@code
 * synchronous_commit} is the server's (reported).
 */
final class NotifyLockScenario implements Scenario {
    static final int SQL_WRITERS = 8;
    static final int PROVIDERS = 8;

    /** Whether writes notify. */
    enum Arm {
        ACTIVE("active", "triggers and announcements on (activated)"),
        DISABLED("disabled", "nothing notifies (deactivated)");

        final String key;
        final String label;

        Arm(String key, String label) {
            this.key = key;
            this.label = label;
        }
    }

    private static final Arm[] ORDER = {Arm.ACTIVE, Arm.DISABLED, Arm.DISABLED, Arm.ACTIVE};

    @Override
    public String name() {
        return "notify-lock";
    }

    @Override
    public String title() {
        return "The notification commit lock: many writers, notifying or not";
    }

    private static String description() {
        return SQL_WRITERS + " plain-SQL writers (enqueue_activity, each on its own connection, autocommit) and "
                + PROVIDERS + " providers (long polling off, each with one thread calling enqueueForWorker) write "
                + "worker items as fast as they can on one schema whose long-polling provider listens throughout. "
                + "Arm active (column long): the schema activated, so every SQL write's trigger notifies and every "
                + "provider announces; arm disabled (column short): the schema deactivated, nothing notifies. Fresh "
                + "providers are started for each phase (a provider reads the activation at start). Arms run "
                + "active, disabled, disabled, active per round after an unrecorded warm-up phase; wait events of the "
                + "active backends are sampled every 50 ms (Lock:object is the notification lock).";
    }

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        long start = System.nanoTime();
        Profile prof = ctx.profile();
        Map<Arm, Totals> totals = new EnumMap<>(Arm.class);
        for (Arm a : Arm.values()) {
            totals.put(a, new Totals());
        }
        List<Map<String, Object>> phases = new ArrayList<>();
        String synchronousCommit;
        try (Hub hub = ctx.hub(name(), Mode.LONG, 2)) {
            synchronousCommit = setting(ctx.url(), "synchronous_commit");
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setURL(ctx.url());
            SchemaMigrator migrator = new SchemaMigrator(ds, hub.provider().config());
            AtomicLong seq = new AtomicLong();
            phase(ctx, hub, seq, prof, Arm.ACTIVE); // unrecorded: JIT, caches, connections
            for (int round = 0; round < prof.notifyRounds(); round++) {
                for (Arm arm : ORDER) {
                    if (arm == Arm.DISABLED) {
                        migrator.deactivate();
                    }
                    List<Window> w;
                    try {
                        w = phase(ctx, hub, seq, prof, arm);
                    } finally {
                        if (arm == Arm.DISABLED) {
                            migrator.activate();
                        }
                    }
                    totals.get(arm).add(w.get(0), w.get(1));
                    Map<String, Object> ph = new LinkedHashMap<>();
                    ph.put("arm", arm.key);
                    ph.put("sqlWritesPerSecond", Num.round(w.get(0).perSecond()));
                    ph.put("providerWritesPerSecond", Num.round(w.get(1).perSecond()));
                    phases.add(ph);
                    ctx.progress().line("notify-lock: %s: %s SQL + %s provider writes/s", arm.label,
                            Num.text(w.get(0).perSecond()), Num.text(w.get(1).perSecond()));
                }
            }
        }
        ModeResult disabled = totals.get(Arm.DISABLED).result(Mode.SHORT);
        ModeResult active = totals.get(Arm.ACTIVE).result(Mode.LONG);
        active.metric("activeToDisabled", totals.get(Arm.ACTIVE).perSecond() / totals.get(Arm.DISABLED).perSecond(),
                "×", "all writes per second, active ÷ disabled");
        disabled.detail("phases", phases);
        active.detail("phases", phases);
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("sqlWriters", SQL_WRITERS);
        settings.put("providers", PROVIDERS);
        settings.put("synchronousCommit", synchronousCommit);
        settings.put("phaseSeconds", prof.notifyPhase().toMillis() / 1000.0);
        settings.put("order", "active, disabled, disabled, active × " + prof.notifyRounds());
        return new ScenarioResult(name(), title(), description(), settings, disabled, active, List.of(
                "Here the short column is the deactivated schema (nothing notifies) and the long column the "
                        + "activated one."), (System.nanoTime() - start) / 1e9);
    }

    /** One phase: fresh writers of both kinds write for one window; returns the SQL writers' and the providers'. */
    private static List<Window> phase(BenchContext ctx, Hub hub, AtomicLong seq, Profile prof, Arm arm)
            throws Exception {
        PostgresProviderConfig writerConfig = hub.provider().config().toBuilder().longPolling(false).poolSize(1)
                .migrationPolicy(MigrationPolicy.VERIFY_ONLY).build();
        List<PostgresProvider> providers = new ArrayList<>();
        List<Connection> connections = new ArrayList<>();
        Workers writers = new Workers();
        AtomicLong sqlDone = new AtomicLong();
        AtomicLong providerDone = new AtomicLong();
        String statement = "SELECT " + Identifiers.quote(hub.schema()) + ".enqueue_activity('lock', 1, ?, 'L', '{}')";
        try {
            for (int i = 0; i < PROVIDERS; i++) {
                providers.add(PostgresProvider.create(writerConfig));
            }
            List<PreparedStatement> statements = new ArrayList<>();
            for (int i = 0; i < SQL_WRITERS; i++) {
                Connection c = DriverManager.getConnection(ctx.url());
                connections.add(c);
                statements.add(c.prepareStatement(statement));
            }
            writers.start("notify-lock-sql", SQL_WRITERS, i -> () -> {
                PreparedStatement ps = statements.get(i);
                ps.setLong(1, seq.incrementAndGet());
                ps.execute();
                sqlDone.incrementAndGet();
            });
            writers.start("notify-lock-provider", PROVIDERS, i -> () -> {
                providers.get(i).enqueueForWorker(new WorkItem.ActivityExecute("lock", 1, seq.incrementAndGet(), "L",
                        "{}"));
                providerDone.incrementAndGet();
            });
            List<Window> w = Window.measureEach(ctx, writers, List.of(sqlDone, providerDone),
                    java.time.Duration.ofMillis(Math.min(500, prof.notifyPhase().toMillis() / 4)), prof.notifyPhase(),
                    "notify-lock " + arm.key, "writes");
            writers.stop();
            return w;
        } finally {
            writers.stop();
            writers.join();
            for (PostgresProvider p : providers) {
                p.close();
            }
            for (Connection c : connections) {
                c.close();
            }
            try (Connection c = DriverManager.getConnection(ctx.url()); Statement st = c.createStatement()) {
                st.execute("TRUNCATE " + Identifiers.quote(hub.schema()) + ".worker_queue");
            }
        }
    }

    private static String setting(String url, String name) throws Exception {
        try (Connection c = DriverManager.getConnection(url);
             PreparedStatement ps = c.prepareStatement("SELECT current_setting(?)")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** The sums of one arm's phases. */
    private static final class Totals {
        long sql;
        long provider;
        long statements;
        double seconds;
        final Map<String, Long> waits = new java.util.TreeMap<>();

        @SuppressWarnings("unchecked")
        void add(Window sqlWindow, Window providerWindow) {
            sql += sqlWindow.units();
            provider += providerWindow.units();
            statements += sqlWindow.statements();
            seconds += sqlWindow.seconds();
            ((Map<String, Long>) sqlWindow.waits().get("activeBackendObservations")).forEach((k, v) ->
                    waits.merge(k, v, Long::sum));
        }

        double perSecond() {
            return seconds == 0 ? Double.NaN : (sql + provider) / seconds;
        }

        ModeResult result(Mode mode) {
            return new ModeResult(mode)
                    .metric("writesPerSecond", perSecond(), "items/s", "all writes per second")
                    .metric("sqlWritesPerSecond", sql / seconds, "items/s", SQL_WRITERS + " plain-SQL writers")
                    .metric("providerWritesPerSecond", provider / seconds, "items/s", PROVIDERS + " providers")
                    .detail("waitEvents", Map.of("activeBackendObservations", waits));
        }
    }
}
