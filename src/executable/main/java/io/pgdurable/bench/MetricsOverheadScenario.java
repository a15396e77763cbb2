package io.pgdurable.bench;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgdurable.longpoll.LongPollView;
import io.pgdurable.metrics.PgDurableMetrics;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the metrics binder costs: the single-item throughput loop of {@link ThroughputScenario} ({@value #CLIENTS}
 * clients per arm, each enqueue → fetch → ack, long polling), with and without {@link PgDurableMetrics} registered in
 * a Prometheus registry that is scraped every {@value #SCRAPE_SECONDS} s (what {@code serve --metrics-port} does).
 *
 * <p>The two arms run at the same time, each on its own schema with its own fresh provider per phase, so a stall of
 * the machine (the runs of this machine differ by up to 15 % from one phase to the next) falls on both arms alike
 * and cancels out of their ratio. Which arm gets which schema alternates in a mirrored order per round after an
 * unrecorded warm-up phase, so a difference between the schemas cancels out too. The arms share one JVM: a
 * collection pause the binder's allocations cause stops both, so the binder's garbage is charged to it only half;
 * the binder allocates nothing per event (only its scrapes do). The short column holds the arm without the binder,
 * the long column the arm with it.
 */
final class MetricsOverheadScenario implements Scenario {
    static final int CLIENTS = ThroughputScenario.CLIENTS;
    static final int SCRAPE_SECONDS = 5;
    private static final Duration LOCK = Duration.ofSeconds(60);

    /** With or without the binder. */
    enum Arm {
        OFF("off"),
        ON("on");

        final String key;

        Arm(String key) {
            this.key = key;
        }
    }

    /** Per phase: does the first schema get the binder (the second gets the other arm)? Mirrored per round. */
    private static final boolean[] ON_FIRST_SCHEMA = {false, true, true, false};

    @Override
    public String name() {
        return "metrics-overhead";
    }

    @Override
    public String title() {
        return "Metrics binder cost on single-item throughput";
    }

    private static String description() {
        return "Two arms at the same time, " + CLIENTS + " clients each, each client looping: enqueue one worker "
                + "item, fetch one (long polling, pollTimeout 30 s), ack it. One arm is a provider without metrics "
                + "(column short), the other the same provider with PgDurableMetrics in a Prometheus registry scraped "
                + "every " + SCRAPE_SECONDS + " s (column long); each arm has its own schema and a fresh provider per "
                + "phase, and which arm gets which schema alternates (first schema off, on, on, off per round) after "
                + "an unrecorded warm-up phase.";
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
        AtomicLong seq = new AtomicLong();
        PostgresProviderConfig[] bases = new PostgresProviderConfig[2];
        for (int i = 0; i < 2; i++) {
            // The hub creates and activates a schema; the phases bring their own providers.
            try (Hub hub = ctx.hub(name() + (i == 0 ? "" : "_b"), Mode.LONG, CLIENTS + 2)) {
                bases[i] = hub.provider().config();
            }
        }
        Map<Arm, LatencyRecorder> unrecorded = Map.of(Arm.OFF, new LatencyRecorder(), Arm.ON, new LatencyRecorder());
        phase(ctx, bases, true, seq, unrecorded, prof.notifyPhase()); // warm-up
        Map<Arm, LatencyRecorder> cycles = Map.of(Arm.OFF, totals.get(Arm.OFF).cycle, Arm.ON, totals.get(Arm.ON).cycle);
        long statements = 0;
        for (int round = 0; round < prof.notifyRounds(); round++) {
            for (boolean onFirst : ON_FIRST_SCHEMA) {
                Map<Arm, Window> w = phase(ctx, bases, onFirst, seq, cycles, prof.notifyPhase());
                Map<String, Object> ph = new LinkedHashMap<>();
                ph.put("onSchema", onFirst ? 1 : 2);
                statements += w.get(Arm.ON).statements(); // the window's, both arms'
                for (Arm arm : Arm.values()) {
                    totals.get(arm).add(w.get(arm));
                    ph.put(arm.key + "ItemsPerSecond", Num.round(w.get(arm).perSecond()));
                }
                ph.put("ratio", Num.round(w.get(Arm.ON).perSecond() / w.get(Arm.OFF).perSecond()));
                ph.put("seconds", Num.round(w.get(Arm.ON).seconds()));
                phases.add(ph);
                ctx.progress().line("metrics-overhead: %s items/s without the binder, %s with it",
                        Num.text(w.get(Arm.OFF).perSecond()), Num.text(w.get(Arm.ON).perSecond()));
            }
        }
        long items = totals.get(Arm.OFF).units + totals.get(Arm.ON).units;
        double perItem = items == 0 ? Double.NaN : (double) statements / items;
        ModeResult off = totals.get(Arm.OFF).result(Mode.SHORT, ctx, perItem).detail("phases", phases);
        ModeResult on = totals.get(Arm.ON).result(Mode.LONG, ctx, perItem).detail("phases", phases);
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("clientsPerArm", CLIENTS);
        settings.put("phaseSeconds", prof.notifyPhase().toMillis() / 1000.0);
        settings.put("scrapeEverySeconds", SCRAPE_SECONDS);
        List<String> order = new ArrayList<>();
        for (boolean onFirst : ON_FIRST_SCHEMA) {
            order.add(onFirst ? "on" : "off");
        }
        settings.put("firstSchemaOrder", String.join(", ", order) + " × " + prof.notifyRounds());
        return new ScenarioResult(name(), title(), description(), settings, off, on, List.of(
                "Both columns long-poll, side by side at the same time; the short column is the provider without "
                        + "metrics, the long column the same provider with the metrics binder. The target is their "
                        + "ratio. Statements per item count both arms' statements over both arms' items."),
                (System.nanoTime() - start) / 1e9);
    }

    /**
     * One phase: a fresh provider of each arm on its schema (the binder's on the first when {@code onFirst}), both
     * arms' clients at once for one window, then both closed. The window's statements are both arms' together.
     */
    private static Map<Arm, Window> phase(BenchContext ctx, PostgresProviderConfig[] bases, boolean onFirst,
                                          AtomicLong seq, Map<Arm, LatencyRecorder> cycles, Duration window)
            throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Map<Arm, PostgresProviderConfig> configs = new EnumMap<>(Arm.class);
        configs.put(Arm.OFF, bases[onFirst ? 1 : 0]);
        configs.put(Arm.ON, bases[onFirst ? 0 : 1].toBuilder().metrics(new PgDurableMetrics(registry)).build());
        Map<Arm, AtomicLong> done = new EnumMap<>(Arm.class);
        Workers clients = new Workers();
        ScheduledExecutorService scraper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "bench-metrics-scrape");
            t.setDaemon(true);
            return t;
        });
        try (PostgresProvider off = PostgresProvider.create(configs.get(Arm.OFF));
             PostgresProvider on = PostgresProvider.create(configs.get(Arm.ON));
             Workers.Stopping stopFirst = clients.stopFirst()) {
            Map<Arm, PostgresProvider> providers = Map.of(Arm.OFF, off, Arm.ON, on);
            for (Arm arm : Arm.values()) {
                PostgresProvider p = providers.get(arm);
                if (!Pause.until(() -> p.longPolling().map(LongPollView::isListening).orElse(false), 15_000)) {
                    throw new IllegalStateException("the provider of arm " + arm.key + " is not listening after 15 s");
                }
            }
            scraper.scheduleAtFixedRate(registry::scrape, 0, SCRAPE_SECONDS, TimeUnit.SECONDS);
            for (Arm arm : Arm.values()) {
                PostgresProvider p = providers.get(arm);
                LatencyRecorder cycle = cycles.get(arm);
                AtomicLong count = new AtomicLong();
                done.put(arm, count);
                clients.start("metrics-client-" + arm.key, CLIENTS, i -> () -> {
                    long t0 = System.nanoTime();
                    p.enqueueForWorker(new WorkItem.ActivityExecute("mo", 1, seq.incrementAndGet(), "Mo", "{}"));
                    Optional<FetchedWorkItem> f = Optional.empty();
                    while (f.isEmpty() && clients.running()) {
                        f = Mode.LONG.pollWork(p, LOCK);
                    }
                    if (f.isPresent()) {
                        p.ackWorkItem(f.get().lockToken(), null);
                        cycle.recordNanos(System.nanoTime() - t0);
                        count.incrementAndGet();
                    }
                });
            }
            List<Window> w = Window.measureEach(ctx, clients, List.of(done.get(Arm.OFF), done.get(Arm.ON)),
                    Duration.ofMillis(Math.min(500, window.toMillis() / 4)), window, "metrics-overhead", "items");
            Map<Arm, Window> out = new EnumMap<>(Arm.class);
            out.put(Arm.OFF, w.get(0));
            out.put(Arm.ON, w.get(1));
            clients.stop();
            return out;
        } finally {
            clients.stop();
            scraper.shutdownNow();
            clients.join();
        }
    }

    /** The sums of one arm's phases. */
    private static final class Totals {
        final LatencyRecorder cycle = new LatencyRecorder();
        long units;
        double seconds;

        void add(Window w) {
            units += w.units();
            seconds += w.seconds();
        }

        /** {@code statementsPerItem}: both arms' statements over both arms' items (one server counts them all). */
        ModeResult result(Mode mode, BenchContext ctx, double statementsPerItem) {
            return new ModeResult(mode)
                    .metric("itemsPerSecond", seconds == 0 ? Double.NaN : units / seconds, "items/s",
                            "single-item enqueue → fetch → ack, " + CLIENTS + " clients (beside the other arm's "
                                    + CLIENTS + ")")
                    .metric("statementsPerItem", statementsPerItem, ctx.counter().source().unit() + "/item",
                            "server " + ctx.counter().source().unit() + " per item, both arms together")
                    .latency("cycle", cycle);
        }
    }
}
