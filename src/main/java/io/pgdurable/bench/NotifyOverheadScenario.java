package io.pgdurable.bench;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The write-path cost of notifications: enqueue throughput of {@value #CLIENTS} clients on one schema, through a
 * provider that announces nothing ({@code short} column: the schema deactivated, a provider that does not long-poll,
 * what a short-polling deployment pays) and through the long-polling provider, which announces every enqueue
 * ({@code long} column). Phases run off, on, on, off (so a drift over the run cancels out); the wait events of the
 * active backends are sampled in every phase.
 */
final class NotifyOverheadScenario implements Scenario {
    static final int CLIENTS = 4;

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
                + "stays connected (listening) throughout; in phases off they enqueue through a provider that announces "
                + "nothing (the schema deactivated; column short), in phases on through the long-polling provider, "
                + "which announces every enqueue (column long); phases alternate off, on, on, off. Wait events of the "
                + "active backends are sampled every 50 ms.";
    }

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        long start = System.nanoTime();
        Profile prof = ctx.profile();
        Map<Boolean, Totals> totals = new LinkedHashMap<>();
        totals.put(false, new Totals());
        totals.put(true, new Totals());
        List<Map<String, Object>> phases = new ArrayList<>();
        try (Hub hub = ctx.hub(name(), Mode.LONG, CLIENTS + 2)) {
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setURL(ctx.url());
            SchemaMigrator migrator = new SchemaMigrator(ds, hub.provider().config());
            AtomicLong seq = new AtomicLong();
            for (int round = 0; round < prof.notifyRounds(); round++) {
                for (boolean on : new boolean[] {false, true, true, false}) {
                    Window w;
                    Totals t = totals.get(on);
                    if (on) {
                        Pause.sleep(200);
                        w = phase(ctx, hub.provider(), seq, t.latency, prof.notifyPhase(), true);
                    } else {
                        migrator.deactivate();
                        try (PostgresProvider silent = PostgresProvider.create(hub.provider().config().toBuilder()
                                .longPolling(false).build())) {
                            Pause.sleep(200);
                            w = phase(ctx, silent, seq, t.latency, prof.notifyPhase(), false);
                        } finally {
                            migrator.activate();
                        }
                    }
                    t.add(w, w.waits());
                    Map<String, Object> ph = new LinkedHashMap<>();
                    ph.put("announcements", on ? "on" : "off");
                    ph.put("enqueuesPerSecond", Num.round(w.perSecond()));
                    ph.put("seconds", Num.round(w.seconds()));
                    phases.add(ph);
                    ctx.progress().line("notify-overhead: announcements %s: %s enqueues/s", on ? "on" : "off",
                            Num.text(w.perSecond()));
                }
            }
        }
        ModeResult off = totals.get(false).result(Mode.SHORT, ctx);
        ModeResult on = totals.get(true).result(Mode.LONG, ctx);
        off.detail("phases", phases);
        on.detail("phases", phases);
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("clients", CLIENTS);
        settings.put("phaseSeconds", prof.notifyPhase().toMillis() / 1000.0);
        settings.put("order", "off, on, on, off × " + prof.notifyRounds());
        return new ScenarioResult(name(), title(), description(), settings, off, on, List.of(
                "Here the short column is a provider that announces nothing (schema deactivated) and the long "
                        + "column the long-polling provider, which announces every enqueue; both on the same schema, "
                        + "with the long-polling provider listening throughout."),
                (System.nanoTime() - start) / 1e9);
    }

    private static Window phase(BenchContext ctx, OrchestrationProvider p, AtomicLong seq, LatencyRecorder latency,
                                Duration window, boolean on) throws Exception {
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
                    window, "notify-overhead " + (on ? "on" : "off"), "enqueues");
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
