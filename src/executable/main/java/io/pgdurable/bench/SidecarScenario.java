package io.pgdurable.bench;

import io.pgdurable.durabletask.SidecarConfig;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Orchestrations through the Durable Task sidecar, end to end: a real Durable Task worker runs a fan-out/fan-in of
 * {@value #FANOUT} trivial activities and a real client schedules and waits, both over loopback gRPC to a sidecar in
 * this process. {@value #IN_FLIGHT} client drivers keep that many orchestrations in flight. The figures are
 * informational: no target is set for them.
 */
final class SidecarScenario extends PairedScenario {
    static final int FANOUT = 5;
    /** Client drivers, each with one orchestration in flight: enough to keep both cores busy without queueing. */
    static final int IN_FLIGHT = 8;
    /** Worker connections; each runs one item at a time (durabletask-client 1.5.0), so two use both cores. */
    static final int WORKERS = 2;
    static final Duration ORCHESTRATION_TIMEOUT = Duration.ofSeconds(30);

    @Override
    public String name() {
        return "sidecar";
    }

    @Override
    public String title() {
        return "Durable Task sidecar: fan-out/fan-in orchestrations (" + FANOUT + " activities)";
    }

    @Override
    String description() {
        return "The Durable Task sidecar (`pgdurable serve`) in this process on 127.0.0.1 (a free port), with "
                + WORKERS + " real Durable Task for Java workers and a real client (durabletask-client 1.5.0) "
                + "connected over loopback gRPC. The orchestration calls " + FANOUT + " activities at once and "
                + "waits for all of them (each returns its input + 1; no other work). " + IN_FLIGHT + " client "
                + "drivers each loop: schedule an orchestration, wait for its completion "
                + "(waitForInstanceCompletion). Orchestrations/s = completions in the window / window; latency = "
                + "schedule call start to the client seeing it completed, for orchestrations completed inside the "
                + "window. Short mode: the provider does not long-poll and the sidecar sleeps "
                + Mode.SHORT_POLL_INTERVAL.toMillis() + " ms after an empty fetch (`withLongPolling(false)`); long "
                + "mode: the sidecar's fetches park up to " + Mode.LONG_POLL_TIMEOUT.toSeconds() + " s. No target "
                + "is set for this scenario; the figures are for comparison only.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("fanout", FANOUT);
        m.put("inFlight", IN_FLIGHT);
        m.put("workers", WORKERS);
        m.put("sidecarHost", "127.0.0.1");
        m.put("shortPollIntervalMs", Mode.SHORT_POLL_INTERVAL.toMillis());
        m.put("longPollTimeoutSeconds", Mode.LONG_POLL_TIMEOUT.toSeconds());
        m.put("warmupSeconds", p.sidecarWarmup().toMillis() / 1000.0);
        m.put("windowSeconds", p.sidecarWindow().toMillis() / 1000.0);
        m.put("orchestrationTimeoutSeconds", ORCHESTRATION_TIMEOUT.toSeconds());
        return m;
    }

    /** The sidecar's configuration for {@code mode} on {@code schema}. */
    static SidecarConfig config(Mode mode, String schema) {
        SidecarConfig d = SidecarConfig.defaults(schema);
        // The poll interval and timeout are the ones every other scenario's dispatchers use (Mode), so the modes
        // mean the same here; the sidecar's own short-poll default (100 ms) would make short polling look worse.
        return new SidecarConfig("127.0.0.1", 0, d.lockTimeout(), Mode.LONG_POLL_TIMEOUT, mode == Mode.LONG,
                Mode.SHORT_POLL_INTERVAL, null, schema, d.waitFallback(), Duration.ofSeconds(1));
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        requireDurableTaskClient();
        Profile prof = ctx.profile();
        ModeResult r = new ModeResult(mode);
        LatencyRecorder latency = new LatencyRecorder();
        AtomicLong completed = new AtomicLong();
        Workers drivers = new Workers();
        // Drivers insert and read status, the sidecar's two lanes per worker fetch and ack.
        try (Hub hub = ctx.hub(name(), mode, IN_FLIGHT + 2 * WORKERS + 2);
             Workers.Stopping stopFirst = drivers.stopFirst()) {
            SidecarRig rig = SidecarRig.start(hub.provider(), config(mode, hub.schema()), WORKERS, FANOUT);
            try {
                long t0 = System.nanoTime();
                rig.runOne(ORCHESTRATION_TIMEOUT, true);
                ctx.progress().line("sidecar: %s: sidecar on 127.0.0.1:%d, %d workers connected, first "
                                + "orchestration completed with the expected output in %s ms", mode.key(), rig.port(),
                        WORKERS, Num.text((System.nanoTime() - t0) / 1e6));
                // Completions from the end of the warm-up to the end of the window: a slow run (a loaded machine,
                // the quick profile's short window) still gets samples, the drivers' simultaneous first starts are
                // left out, and so are the last ones, which run with fewer in flight while the drivers stop.
                long countFrom = System.nanoTime() + prof.sidecarWarmup().toNanos();
                AtomicBoolean counting = new AtomicBoolean(true);
                drivers.start("sc-driver", IN_FLIGHT, i -> () -> {
                    long start = System.nanoTime();
                    rig.runOne(ORCHESTRATION_TIMEOUT, false);
                    long end = System.nanoTime();
                    if (end >= countFrom && counting.get()) {
                        latency.recordNanos(end - start);
                    }
                    completed.incrementAndGet();
                });
                Window w = Window.measure(ctx, drivers, completed, prof.sidecarWarmup(), prof.sidecarWindow(),
                        "sidecar " + mode.key(), "orchestrations");
                counting.set(false);
                // Checked before draining: with nothing completing, waiting for the drivers would only add the
                // join's bound before the same failure.
                if (w.units() == 0) {
                    throw new IllegalStateException("no orchestration completed in the " + Num.text(w.seconds())
                            + " s window with " + IN_FLIGHT + " in flight: the sidecar stalled");
                }
                // The drivers finish the orchestrations they have in flight (bounded by the join), so closing the
                // rig does not cut the sidecar off in the middle of answering them.
                drivers.stop();
                drivers.join();
                r.metric("orchestrationsPerSecond", w.perSecond(), "orchestrations/s", "fan-out of " + FANOUT
                        + " through the sidecar, " + IN_FLIGHT + " in flight, " + WORKERS + " workers");
                w.perUnit(r, ctx, "", "orchestration");
                r.latency("orchestration", latency);
                r.detail("topStatements", w.top());
                r.detail("waitEvents", w.waits());
            } finally {
                drivers.stop();
                // Cuts the drivers' pending calls, so they end before the join below.
                rig.close();
            }
        } finally {
            drivers.stop();
            drivers.join();
        }
        return r;
    }

    private static void requireDurableTaskClient() {
        try {
            Class.forName("com.microsoft.durabletask.DurableTaskGrpcClient", false,
                    SidecarScenario.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("durabletask-client is not on the class path (it is an optional "
                    + "dependency; run the benchmark from target/pgdurable.jar, which includes it)");
        }
    }
}
