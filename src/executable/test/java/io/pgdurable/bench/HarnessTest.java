package io.pgdurable.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.cli.PgDurableCli;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.OrchestrationProvider;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The benchmark's pieces that need no database: percentiles, target judging, axes, JSON, charts, options. */
class HarnessTest {

    @Test
    void percentiles_are_nearest_rank() {
        LatencyRecorder r = new LatencyRecorder();
        for (int i = 100; i >= 1; i--) {
            r.recordNanos(i * 1_000_000L);
        }
        LatencySummary s = r.summary();
        assertEquals(100, s.count());
        assertEquals(1.0, s.minMs());
        assertEquals(50.0, s.p50Ms());
        assertEquals(99.0, s.p99Ms());
        assertEquals(100.0, s.maxMs());
        assertEquals(50.5, s.meanMs(), 1e-9);
        assertTrue(Double.isNaN(new LatencyRecorder().summary().p50Ms()));
    }

    private static ScenarioResult scenario(String name, double shortValue, double longValue) {
        ModeResult s = new ModeResult(Mode.SHORT).metric("x", shortValue, "u", "x");
        ModeResult l = new ModeResult(Mode.LONG).metric("x", longValue, "u", "x");
        return new ScenarioResult(name, name, "", Map.of(), s, l, List.of(), 0);
    }

    @Test
    void targets_are_met_missed_or_not_measured_never_hidden() {
        Target atMost = Target.atMost("t", "s", "x ≤ 2", "x", 2, "u");
        TargetResult met = TargetResult.judge(atMost, scenario("s", 600, 1.5));
        assertEquals(TargetResult.Status.MET, met.status());
        assertEquals(1.5, met.measured());
        assertEquals(600, met.shortMeasured());
        assertTrue(met.distance().contains("to spare"), met.distance());
        TargetResult missed = TargetResult.judge(atMost, scenario("s", 600, 3));
        assertEquals(TargetResult.Status.MISSED, missed.status());
        assertTrue(missed.distance().contains("missed by 1") && missed.distance().contains("1.50×"),
                missed.distance());
        Target atLeast = Target.atLeast("t", "s", "x ≥ 2", "x", 2, "u");
        assertEquals(TargetResult.Status.MISSED, TargetResult.judge(atLeast, scenario("s", 1, 1)).status());
        TargetResult ratio = TargetResult.judge(Target.atLeast("r", "s", "ratio", "x", 0.9, "×").ofRatio(),
                scenario("s", 100, 95));
        assertEquals(0.95, ratio.measured(), 1e-9);
        assertEquals(TargetResult.Status.MET, ratio.status());
        assertEquals(TargetResult.Status.NOT_MEASURED, TargetResult.judge(atMost, null).status());
        assertEquals(TargetResult.Status.NOT_MEASURED,
                TargetResult.judge(atMost, scenario("s", 1, Double.NaN)).status());
    }

    @Test
    void axes_have_readable_ticks() {
        SvgAxis log = SvgAxis.of(true, List.of(0.3, 42.0), false, false, 0, 100);
        assertEquals(List.of(0.1, 1.0, 10.0, 100.0), log.ticks().stream().map(d -> Math.round(d * 1000) / 1000.0)
                .toList());
        assertEquals(0.0, log.pixel(0.1), 1e-9);
        assertEquals(100.0, log.pixel(100), 1e-9);
        SvgAxis lin = SvgAxis.of(false, List.of(0.0, 100.0), true, false, 0, 100);
        assertEquals(List.of(0.0, 20.0, 40.0, 60.0, 80.0, 100.0), lin.ticks());
        assertEquals("12k", SvgAxis.label(12_000));
        assertEquals("0.5", SvgAxis.label(0.5));
    }

    @Test
    void pretty_json_parses_back_and_writes_no_nan() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", List.of(1, 2));
        m.put("nan", Num.round(Double.NaN));
        m.put("nested", Map.of("s", "x\"y"));
        m.put("rounded", Num.round(2.0 / 3));
        Map<String, Object> back = Json.parseObject(JsonReport.pretty(m));
        assertEquals(List.of(1L, 2L), back.get("a"));
        assertEquals(null, back.get("nan"));
        assertEquals("x\"y", ((Map<?, ?>) back.get("nested")).get("s"));
        assertEquals(0.667, ((Number) back.get("rounded")).doubleValue(), 1e-9);
    }

    @Test
    void cumulative_curves_are_thinned_but_keep_the_tail() {
        double[] sorted = new double[10_000];
        for (int i = 0; i < sorted.length; i++) {
            sorted[i] = i / 100.0;
        }
        List<double[]> pts = SvgPlot.cdf(sorted, 0.01);
        assertTrue(pts.size() < 600, "not thinned: " + pts.size());
        assertEquals(99.99, pts.get(pts.size() - 1)[0], 1e-9);
        assertEquals(100.0, pts.get(pts.size() - 1)[1], 1e-9);
        assertEquals(0.01, pts.get(0)[0], 1e-9); // zero drawn at the floor of the log axis
        String svg = new SvgPlot("t <&>", "x", "y", true, false).add(new SvgPlot.Series("s", "#000", null, pts,
                false)).render();
        assertTrue(svg.startsWith("<svg") && svg.contains("t &lt;&amp;&gt;") && svg.endsWith("</svg>\n"));
    }

    @Test
    void unknown_scenarios_are_a_usage_error() {
        assertThrows(IllegalArgumentException.class, () -> Bench.select(List.of("idle", "nope")));
        assertEquals(List.of("idle", "fanout"), Bench.select(List.of("fanout", "idle")));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = PgDurableCli.run(new PrintWriter(out), new PrintWriter(err), "bench", "--scenarios", "nope",
                "--db", "jdbc:postgresql://127.0.0.1:1/none");
        assertEquals(2, code);
        assertTrue(err.toString().contains("unknown scenario 'nope'"), err.toString());
        assertFalse(err.toString().contains("password"), err.toString());
    }

    @Test
    void a_sidecar_that_cannot_listen_fails_the_scenario_at_once() throws Exception {
        // Never used: the sidecar fails before any worker could ask it for work.
        OrchestrationProvider unused = (OrchestrationProvider) Proxy.newProxyInstance(
                OrchestrationProvider.class.getClassLoader(), new Class<?>[] {OrchestrationProvider.class},
                (proxy, method, args) -> {
                    throw new UnsupportedOperationException(method.getName());
                });
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            long start = System.nanoTime();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> SidecarRig.start(unused,
                    SidecarScenario.config(Mode.LONG, "unused").withPort(taken.getLocalPort()),
                    SidecarScenario.WORKERS, SidecarScenario.FANOUT));
            assertTrue(e.getMessage().contains("could not start on 127.0.0.1:" + taken.getLocalPort()),
                    e.getMessage());
            assertTrue(System.nanoTime() - start < 10_000_000_000L, "took too long to fail");
        }
    }
}
