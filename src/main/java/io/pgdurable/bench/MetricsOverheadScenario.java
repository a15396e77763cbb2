package io.pgdurable.bench;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgdurable.longpoll.LongPoller;
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
 * clients, each enqueue → fetch → ack, long polling) on one schema, with and without {@link PgDurableMetrics}
 * registered in a Prometheus registry that is scraped every {@value #SCRAPE_SECONDS} s (what {@code serve
 * --metrics-port} does). Each phase gets a fresh provider of its arm, identical but for the binder; arms run in a
 * mirrored order (off, on, on, off) per round after an unrecorded warm-up phase, so a drift over the run cancels out.
 * The short column holds the arm without the binder, the long column the arm with it.
 */
final class MetricsOverheadScenario implements Scenario {
    static final int CLIENTS = ThroughputScenario.CLIENTS;
    static final int SCRAPE_SECONDS = 5;
    private static final Duration LOCK = Duration.ofSeconds(60);

    /** With or without the binder. */
    enum Arm {
        OFF("off", "without the metrics binder"),
        ON("on", "with the metrics binder (Prometheus registry, scraped every " + SCRAPE_SECONDS + " s)");

        final String key;
        final String label;

        Arm(String key, String label) {
            this.key = key;
            this.label = label;
        }
    }

    private static final Arm[] ORDER = {Arm.OFF, Arm.ON, Arm.ON, Arm.OFF};

    @Override
    public String name() {
        return "metrics-overhead";
    }

    @Override
    public String title() {
        return "Metrics binder cost on single-item throughput";
    }

    private static String description() {
        return CLIENTS + " clients, each looping: enqueue one worker item, fetch one (long polling, pollTimeout 30 s), "
                + "ack it; in two arms on one schema: a provider without metrics (column short) and the same provider "
                + "with PgDurableMetrics in a Prometheus registry scraped every " + SCRAPE_SECONDS + " s (column "
                + "long). Every phase starts a fresh provider of its arm; arms run off, on, on, off per round after "
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
        PostgresProviderConfig base;
        try (Hub hub = ctx.hub(name(), Mode.LONG, CLIENTS + 2)) {
            base = hub.provider().config(); // the hub created and activated the schema; phases bring their own
        }
        phase(ctx, base, Arm.ON, seq, new LatencyRecorder(), prof.notifyPhase()); // unrecorded warm-up
        for (int round = 0; round < prof.notifyRounds(); round++) {
            for (Arm arm : ORDER) {
                Totals t = totals.get(arm);
                Window w = phase(ctx, base, arm, seq, t.cycle, prof.notifyPhase());
                t.add(w);
                Map<String, Object> ph = new LinkedHashMap<>();
                ph.put("arm", arm.key);
                ph.put("itemsPerSecond", Num.round(w.perSecond()));
                ph.put("seconds", Num.round(w.seconds()));
                phases.add(ph);
                ctx.progress().line("metrics-overhead: %s: %s items/s", arm.label, Num.text(w.perSecond()));
            }
        }
        ModeResult off = totals.get(Arm.OFF).result(Mode.SHORT, ctx).detail("phases", phases);
        ModeResult on = totals.get(Arm.ON).result(Mode.LONG, ctx).detail("phases", phases);
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("clients", CLIENTS);
        settings.put("phaseSeconds", prof.notifyPhase().toMillis() / 1000.0);
        settings.put("scrapeEverySeconds", SCRAPE_SECONDS);
        List<String> order = new ArrayList<>();
        for (Arm a : ORDER) {
            order.add(a.key);
        }
        settings.put("order", String.join(", ", order) + " × " + prof.notifyRounds());
        return new ScenarioResult(name(), title(), description(), settings, off, on, List.of(
                "Both columns long-poll; the short column is the provider without metrics, the long column the same "
                        + "provider with the metrics binder. The target is their ratio."),
                (System.nanoTime() - start) / 1e9);
    }

    /** One phase: a fresh provider of {@code arm} on the schema, clients for one window, then closed. */
    private static Window phase(BenchContext ctx, PostgresProviderConfig base, Arm arm, AtomicLong seq,
                                LatencyRecorder cycle, Duration window) throws Exception {
        PrometheusMeterRegistry registry = arm == Arm.ON ? new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)
                : null;
        PostgresProviderConfig config = registry == null ? base
                : base.toBuilder().metrics(new PgDurableMetrics(registry)).build();
        AtomicLong done = new AtomicLong();
        Workers clients = new Workers();
        ScheduledExecutorService scraper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "bench-metrics-scrape");
            t.setDaemon(true);
            return t;
        });
        try (PostgresProvider p = PostgresProvider.create(config);
             Workers.Stopping stopFirst = clients.stopFirst()) {
            if (!Pause.until(() -> p.longPoller().map(LongPoller::isListening).orElse(false), 15_000)) {
                throw new IllegalStateException("the provider of arm " + arm.key + " is not listening after 15 s");
            }
            if (registry != null) {
                scraper.scheduleAtFixedRate(registry::scrape, 0, SCRAPE_SECONDS, TimeUnit.SECONDS);
            }
            clients.start("metrics-client", CLIENTS, i -> () -> {
                long t0 = System.nanoTime();
                p.enqueueForWorker(new WorkItem.ActivityExecute("mo", 1, seq.incrementAndGet(), "Mo", "{}"));
                Optional<FetchedWorkItem> f = Optional.empty();
                while (f.isEmpty() && clients.running()) {
                    f = Mode.LONG.pollWork(p, LOCK);
                }
                if (f.isPresent()) {
                    p.ackWorkItem(f.get().lockToken(), null);
                    cycle.recordNanos(System.nanoTime() - t0);
                    done.incrementAndGet();
                }
            });
            Window w = Window.measure(ctx, clients, done, Duration.ofMillis(Math.min(500, window.toMillis() / 4)),
                    window, "metrics-overhead " + arm.key, "items");
            clients.stop();
            return w;
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
        long statements;
        double seconds;

        void add(Window w) {
            units += w.units();
            statements += w.statements();
            seconds += w.seconds();
        }

        ModeResult result(Mode mode, BenchContext ctx) {
            return new ModeResult(mode)
                    .metric("itemsPerSecond", seconds == 0 ? Double.NaN : units / seconds, "items/s",
                            "single-item enqueue → fetch → ack, " + CLIENTS + " clients")
                    .metric("statementsPerItem", units == 0 ? Double.NaN : (double) statements / units,
                            ctx.counter().source().unit() + "/item", "server " + ctx.counter().source().unit()
                                    + " per item")
                    .latency("cycle", cycle);
        }
    }
}
