package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The write-path cost of notifications: enqueue throughput of {@value #CLIENTS} clients on one schema whose
 * long-polling provider stays connected (listening) throughout, in three arms:
 *
 * <ul>
 *   <li>{@code off}: the schema deactivated (triggers disabled), a provider that announces nothing: what a
 *       short-polling deployment pays ({@code short} column);</li>
 *   <li>{@code announcer}: the long-polling provider, which announces every enqueue after its commit, with the
 *       schema's notify triggers enabled and skipped for its writes: the default ({@code long} column);</li>
 *   <li>{@code announcer, triggers disabled}: the same with the triggers disabled by hand, so the
 *       cost of installed-but-skipped triggers is measured, not assumed.</li>
 * </ul>
 *
 * An unrecorded warm-up phase comes first; then arms run in a mirrored order (a, b, c, c, b, a) per round,
 * so a drift over the run cancels out; the wait events of the active backends are sampled in every phase.
 */
final class NotifyOverheadScenario implements Scenario {
    static final int CLIENTS = 4;

    /** One way the enqueues notify (or not). */
    enum Arm {
        OFF("off", "no notifications"),
        ANNOUNCER("announcer", "announcer (triggers enabled, skipped)"),
        ANNOUNCER_TRIGGERS_DISABLED("announcerTriggersDisabled", "announcer (triggers disabled)");

        final String key;
        final String label;

        Arm(String key, String label) {
            this.key = key;
            this.label = label;
        }
    }

    private static final Arm[] ORDER = {Arm.OFF, Arm.ANNOUNCER, Arm.ANNOUNCER_TRIGGERS_DISABLED,
            Arm.ANNOUNCER_TRIGGERS_DISABLED, Arm.ANNOUNCER, Arm.OFF};

    @Override
    public String name() {
        return "notify-overhead";
    }

    @Override
    public String title() {
        return "Notification cost on the write path";
    }

    private static String description() {
        return CLIENTS + " clients enqueue worker items as fast as they can on one schema whose long-polling provider "
                + "stays connected (listening) throughout, in three arms: off (the schema deactivated, its triggers "
                + "disabled, a provider that announces nothing; column short), announcer (the long-polling provider "
                + "announces every enqueue after its commit; the notify triggers are enabled and skip its writes; "
                + "column long), and announcer with the triggers disabled. Arms run "
                + "off, announcer, announcer-triggers-disabled and back in mirrored order per round, after "
                + "an unrecorded warm-up phase. "
                + "Wait events of the active backends are sampled every 50 ms.";
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
        try (Hub hub = ctx.hub(name(), Mode.LONG, CLIENTS + 2)) {
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setURL(ctx.url());
            PostgresProviderConfig hubConfig = hub.provider().config();
            SchemaMigrator migrator = new SchemaMigrator(ds, hubConfig);
            AtomicLong seq = new AtomicLong();
            // Unrecorded: the first phase of a run was the slowest whatever its arm (JIT, caches, connections).
            phase(ctx, hub.provider(), seq, new LatencyRecorder(), prof.notifyPhase(), Arm.ANNOUNCER);
            for (int round = 0; round < prof.notifyRounds(); round++) {
                for (Arm arm : ORDER) {
                    Window w = runArm(ctx, arm, hub, migrator, ds, seq, totals.get(arm).latency, prof.notifyPhase());
                    totals.get(arm).add(w, w.waits());
                    Map<String, Object> ph = new LinkedHashMap<>();
                    ph.put("arm", arm.key);
                    ph.put("announcements", arm == Arm.ANNOUNCER || arm == Arm.ANNOUNCER_TRIGGERS_DISABLED ? "on"
                            : "off");
                    ph.put("enqueuesPerSecond", Num.round(w.perSecond()));
                    ph.put("seconds", Num.round(w.seconds()));
                    phases.add(ph);
                    ctx.progress().line("notify-overhead: %s: %s enqueues/s", arm.label, Num.text(w.perSecond()));
                }
            }
        }
        ModeResult off = totals.get(Arm.OFF).result(Mode.SHORT, ctx);
        ModeResult on = totals.get(Arm.ANNOUNCER).result(Mode.LONG, ctx);
        double announcerRate = totals.get(Arm.ANNOUNCER).perSecond();
        Totals disabled = totals.get(Arm.ANNOUNCER_TRIGGERS_DISABLED);
        on.metric(Arm.ANNOUNCER_TRIGGERS_DISABLED.key + ".enqueuesPerSecond", disabled.perSecond(), "items/s",
                        Arm.ANNOUNCER_TRIGGERS_DISABLED.label)
                .latency(Arm.ANNOUNCER_TRIGGERS_DISABLED.key + ".enqueue", disabled.latency)
                .metric("skippedTriggersRatio", announcerRate / disabled.perSecond(), "×",
                        "announcer with triggers enabled and skipped ÷ announcer with triggers disabled");
        off.detail("phases", phases);
        on.detail("phases", phases);
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("clients", CLIENTS);
        settings.put("phaseSeconds", prof.notifyPhase().toMillis() / 1000.0);
        List<String> order = new ArrayList<>();
        for (Arm a : ORDER) {
            order.add(a.key);
        }
        settings.put("order", String.join(", ", order) + " × " + prof.notifyRounds());
        return new ScenarioResult(name(), title(), description(), settings, off, on, List.of(
                "Here the short column is a provider that announces nothing (schema deactivated, triggers disabled) "
                        + "and the long column the long-polling provider, which announces every enqueue with the "
                        + "triggers enabled and skipped; the long column also reports the third arm "
                        + "(announcerTriggersDisabled.*) and its ratio."),
                (System.nanoTime() - start) / 1e9);
    }

    /** One phase of {@code arm}: sets the schema up for it, enqueues for one window, and puts the schema back. */
    private static Window runArm(BenchContext ctx, Arm arm, Hub hub, SchemaMigrator migrator, DataSource ds,
                                 AtomicLong seq, LatencyRecorder latency, Duration window) throws Exception {
        PostgresProviderConfig silent = hub.provider().config().toBuilder().longPolling(false).build();
        switch (arm) {
            case ANNOUNCER:
                Pause.sleep(200);
                return phase(ctx, hub.provider(), seq, latency, window, arm);
            case ANNOUNCER_TRIGGERS_DISABLED:
                setTriggers(ds, hub.schema(), false);
                try {
                    Pause.sleep(200);
                    return phase(ctx, hub.provider(), seq, latency, window, arm);
                } finally {
                    setTriggers(ds, hub.schema(), true);
                }
            default:
                migrator.deactivate();
                try (PostgresProvider quiet = PostgresProvider.create(silent)) {
                    Pause.sleep(200);
                    return phase(ctx, quiet, seq, latency, window, arm);
                } finally {
                    migrator.activate();
                }
        }
    }

    /** The schema's notify triggers on or off, leaving the activation setting alone. */
    private static void setTriggers(DataSource ds, String schema, boolean enabled) throws SQLException {
        try (Connection c = ds.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT " + Identifiers.quote(schema)
                     + ".set_notify_triggers(?)")) {
            ps.setBoolean(1, enabled);
            ps.execute();
        }
    }

    private static Window phase(BenchContext ctx, OrchestrationProvider p, AtomicLong seq, LatencyRecorder latency,
                                Duration window, Arm arm) throws Exception {
        AtomicLong done = new AtomicLong();
        Workers clients = new Workers();
        try {
            clients.start("notify-client", CLIENTS, i -> () -> {
                long t0 = System.nanoTime();
                p.enqueueForWorker(new WorkItem.ActivityExecute("notify", 1, seq.incrementAndGet(), "N", "{}"));
                latency.recordNanos(System.nanoTime() - t0);
                done.incrementAndGet();
            });
            Window w = Window.measure(ctx, clients, done, Duration.ofMillis(Math.min(500, window.toMillis() / 4)),
                    window, "notify-overhead " + arm.key, "enqueues");
            clients.stop();
            return w;
        } finally {
            clients.stop();
            clients.join();
        }
    }

    /** The sums of one announcement state's phases. */
    private static final class Totals {
        final LatencyRecorder latency = new LatencyRecorder();
        long units;
        long statements;
        double seconds;
        final Map<String, Long> waits = new java.util.TreeMap<>();
        long samples;

        @SuppressWarnings("unchecked")
        void add(Window w, Map<String, Object> waitSample) {
            units += w.units();
            statements += w.statements();
            seconds += w.seconds();
            samples += (Long) waitSample.get("samples");
            ((Map<String, Long>) waitSample.get("activeBackendObservations")).forEach((k, v) -> waits.merge(k, v,
                    Long::sum));
        }

        double perSecond() {
            return seconds == 0 ? Double.NaN : units / seconds;
        }

        ModeResult result(Mode mode, BenchContext ctx) {
            Map<String, Object> w = new LinkedHashMap<>();
            w.put("samples", samples);
            w.put("activeBackendObservations", waits);
            return new ModeResult(mode)
                    .metric("enqueuesPerSecond", units / seconds, "items/s", CLIENTS + " clients enqueuing")
                    .metric("statementsPerEnqueue", units == 0 ? Double.NaN : (double) statements / units,
                            ctx.counter().source().unit() + "/item", "server " + ctx.counter().source().unit()
                                    + " per enqueue")
                    .latency("enqueue", latency)
                    .detail("waitEvents", w);
        }
    }
}
