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

/** The benchmark's pieces that need no database: percentiles, slowest samples, target judging, JSON, options. */
class HarnessTest {

    /** Within a three-significant-digit histogram's bucket: at most 0.1 % above the sample. */
    private static void assertMs(double expected, double actual) {
        assertTrue(actual >= expected && actual <= expected * 1.001 + 1e-6, "expected " + expected + " ms, got "
                + actual);
    }

    @Test
    void rounds_alternate_their_order_and_combine_into_medians_with_every_sample() {
        assertEquals(List.of(Mode.SHORT, Mode.LONG), Rounds.order(0));
        assertEquals(List.of(Mode.LONG, Mode.SHORT), Rounds.order(1));
        assertEquals(List.of(Mode.SHORT, Mode.LONG), Rounds.order(2));
        List<ModeResult> longRounds = new java.util.ArrayList<>();
        List<ModeResult> shortRounds = new java.util.ArrayList<>();
        double[] longValues = {30, 10, 20};
        for (int i = 0; i < 3; i++) {
            LatencyRecorder each = new LatencyRecorder();
            each.recordNanos((i + 1) * 1_000_000L);
            longRounds.add(new ModeResult(Mode.LONG).metric("x", longValues[i], "u", "x").latency("lat", each)
                    .detail("first", i));
            shortRounds.add(new ModeResult(Mode.SHORT).metric("x", 10, "u", "x"));
        }
        ModeResult combined = Rounds.combine(Mode.LONG, longRounds);
        assertEquals(20, combined.value("x"), 1e-9);
        assertEquals(3, combined.latencies().get("lat").count());
        assertEquals(0, combined.details().get("first"));
        assertEquals(3, ((List<?>) combined.details().get("rounds")).size());
        assertEquals(List.of(3.0, 1.0, 2.0), Rounds.roundRatios(shortRounds, longRounds).get("x"));
        longRounds.get(1).metric("x", Double.NaN, "u", "x");
        assertEquals(25, Rounds.combine(Mode.LONG, longRounds).value("x"), 1e-9, "an unmeasured round is left out");
        assertEquals(java.util.Arrays.asList(3.0, null, 2.0), Rounds.roundRatios(shortRounds, longRounds).get("x"));
        shortRounds.get(0).metric("x", 0, "u", "x");
        assertEquals(null, Rounds.roundRatios(shortRounds, longRounds).get("x").get(0));
        assertTrue(Rounds.combine(Mode.LONG, longRounds.subList(0, 1)) == longRounds.get(0));
    }

    @Test
    void percentiles_are_nearest_rank_to_the_histograms_precision() {
        LatencyRecorder r = new LatencyRecorder();
        for (int i = 100; i >= 1; i--) {
            r.recordNanos(i * 1_000_000L);
        }
        LatencySummary s = r.summary();
        assertEquals(100, s.count());
        assertEquals(1.0, s.minMs(), 0.001);
        assertMs(50.0, s.p50Ms());
        assertMs(90.0, s.p90Ms());
        assertMs(99.0, s.p99Ms());
        assertMs(100.0, s.maxMs());
        assertMs(1.0, s.percentileMs(1));
        assertMs(100.0, s.percentileMs(99.9));
        assertEquals(50.5, s.meanMs(), 0.05);
        assertTrue(Double.isNaN(new LatencyRecorder().summary().p50Ms()));
        assertTrue(Double.isNaN(new LatencyRecorder().summary().maxMs()));
    }

    @Test
    void sub_millisecond_figures_hold_to_a_hundredth_of_a_millisecond() {
        // a wake-like series: 0.250 .. 0.749 ms in 1 µs steps, and a tail of ten at 4.321 ms
        LatencyRecorder r = new LatencyRecorder();
        for (int i = 0; i < 500; i++) {
            r.recordMicros(250 + i);
        }
        for (int i = 0; i < 10; i++) {
            r.recordNanos(4_321_000);
        }
        LatencySummary s = r.summary();
        assertEquals(510, s.count());
        assertEquals(0.50, s.p50Ms(), 0.005); // rank 255: 0.504 ms
        assertEquals(4.32, s.p99Ms(), 0.005);
        assertEquals(4.32, s.maxMs(), 0.005);
        assertEquals(0.25, s.minMs(), 0.005);
        assertEquals(Num.round(0.504), Num.round(s.p50Ms()));
    }

    @Test
    void negative_samples_are_kept_below_zero_in_order() {
        LatencyRecorder r = new LatencyRecorder();
        for (long ms : new long[] {-3, -1, 0, 2, 5}) {
            r.recordMicros(ms * 1000);
        }
        LatencySummary s = r.summary();
        assertEquals(5, s.count());
        assertEquals(-3.0, s.minMs(), 0.003);
        assertEquals(-3.0, s.percentileMs(20), 0.003);
        assertEquals(-1.0, s.percentileMs(40), 0.001);
        assertEquals(0.0, s.p50Ms());
        assertEquals(2.0, s.percentileMs(80), 0.002);
        assertMs(5.0, s.maxMs());
        assertEquals(0.6, s.meanMs(), 0.01);
        List<double[]> curve = s.cumulative();
        assertEquals(5, curve.size());
        for (int i = 1; i < curve.size(); i++) {
            assertTrue(curve.get(i)[0] > curve.get(i - 1)[0], "the curve goes back at " + i);
        }
        assertEquals(100.0, curve.get(4)[1]);
    }

    @Test
    void slowest_samples_keep_the_n_largest_slowest_first_earlier_of_equal_ones() {
        SlowestSamples<Integer> kept = new SlowestSamples<>(3);
        long[] values = {5, 9, 1, 9, 7, 3, 9, 2};
        for (int i = 0; i < values.length; i++) {
            kept.offer(values[i], i);
        }
        List<SlowestSamples.Sample<Integer>> slowest = kept.slowestFirst();
        assertEquals(List.of(9L, 9L, 9L), slowest.stream().map(SlowestSamples.Sample::value).toList());
        assertEquals(List.of(1, 3, 6), slowest.stream().map(SlowestSamples.Sample::detail).toList());
        SlowestSamples<String> few = new SlowestSamples<>(8);
        few.offer(4, "a");
        few.offer(6, "b");
        assertEquals(List.of("b", "a"), few.slowestFirst().stream().map(SlowestSamples.Sample::detail).toList());
        SlowestSamples<String> one = new SlowestSamples<>(1);
        one.offer(4, "a");
        one.offer(3, "b");
        one.offer(5, "c");
        assertEquals(List.of("c"), one.slowestFirst().stream().map(SlowestSamples.Sample::detail).toList());
        assertThrows(IllegalArgumentException.class, () -> new SlowestSamples<>(0));
    }

    @Test
    void wake_lists_its_slowest_cross_process_samples_with_place_and_send_time() {
        SlowestSamples<WakeScenario.Sent> kept = new SlowestSamples<>(2);
        kept.offer(1_500_000, new WakeScenario.Sent(0, 10_000_000));
        kept.offer(4_250_000, new WakeScenario.Sent(1, 2_500_000_000L));
        kept.offer(300_000, new WakeScenario.Sent(2, 2_600_000_000L));
        List<Map<String, Object>> listed = WakeScenario.slowest(kept);
        assertEquals(2, listed.size());
        assertEquals(Map.of("sample", 1, "sentAtSeconds", 2.5, "millis", 4.25), listed.get(0));
        assertEquals(Map.of("sample", 0, "sentAtSeconds", 0.01, "millis", 1.5), listed.get(1));
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
    void pretty_json_parses_back_and_writes_no_nan() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", List.of(1, 2));
        m.put("nan", Num.round(Double.NaN));
        m.put("nested", Map.of("s", "x\"y"));
        m.put("rounded", Num.round(2.0 / 3));
        m.put("flatNaN", java.util.Arrays.asList(1.5, Double.NaN, Double.POSITIVE_INFINITY, null));
        m.put("nestedNaN", List.of(List.of(Double.NaN, 2.0)));
        Map<String, Object> back = Json.parseObject(JsonReport.pretty(m));
        assertEquals("[1.5, null, null, null]", String.valueOf(back.get("flatNaN")));
        assertEquals("[[null, 2.0]]", String.valueOf(back.get("nestedNaN")));
        assertEquals(List.of(1L, 2L), back.get("a"));
        assertEquals(null, back.get("nan"));
        assertEquals("x\"y", ((Map<?, ?>) back.get("nested")).get("s"));
        assertEquals(0.667, ((Number) back.get("rounded")).doubleValue(), 1e-9);
    }

    @Test
    void cumulative_curves_are_thinned_but_keep_the_tail() {
        LatencyRecorder r = new LatencyRecorder();
        for (int i = 0; i < 10_000; i++) {
            r.recordMicros(i * 10L);
        }
        List<double[]> pts = r.summary().cumulative();
        assertTrue(pts.size() < 600, "not thinned: " + pts.size());
        assertMs(99.99, pts.get(pts.size() - 1)[0]);
        assertEquals(100.0, pts.get(pts.size() - 1)[1], 1e-9);
        assertEquals(0.0, pts.get(0)[0]);
        long inTail = pts.stream().filter(p -> p[1] > 99).count();
        assertTrue(inTail >= 90, "the slowest 1 % has only " + inTail + " points");
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
