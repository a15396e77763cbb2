package io.pgdurable.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's charts drawn from a made-up result of every charted scenario: no database, no measurement. */
class ChartsTest {
    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

    @TempDir
    Path dir;

    @Test
    void every_chart_is_a_png_of_the_report_size_with_its_title_and_both_modes() throws Exception {
        List<Charts.Chart> charts = Charts.render(result());
        Set<String> files = new TreeSet<>();
        charts.forEach(c -> files.add(c.file()));
        assertEquals(new TreeSet<>(List.of("idle-timeline.png", "idle-waiters.png", "wake-latency.png",
                "timer-lateness.png", "lease-reclaim.png", "wakes-per-item.png", "burst-quiet-timeline.png",
                "throughput.png", "throughput-cycle.png", "fanout.png", "fanout-latency.png", "notify-overhead.png",
                "sql-wake-latency.png", "sidecar.png", "sidecar-latency.png")), files);
        for (Charts.Chart c : charts) {
            Path f = dir.resolve(c.file());
            c.writePng(f);
            byte[] bytes = Files.readAllBytes(f);
            assertArrayEquals(PNG_SIGNATURE, Arrays.copyOf(bytes, 8), c.file() + " is not a PNG");
            BufferedImage image = ImageIO.read(f.toFile());
            assertEquals(860, image.getWidth(), c.file());
            assertEquals(c.height(), image.getHeight(), c.file());
            if (!c.file().equals("notify-overhead.png")) { // its bars are phases, coloured by phase
                assertTrue(has(image, 0xd95f02) && has(image, 0x1b7f9e), c.file() + " lacks a mode's colour");
            }
        }
        Charts.Chart wake = charts.stream().filter(c -> c.file().equals("wake-latency.png")).findFirst().get();
        assertEquals("Wake latency: enqueue commit → fetch return", wake.plot().getTitle());
        assertEquals("wake", wake.scenario());
        assertTrue(wake.caption().startsWith("Wake latency"), wake.caption());
    }

    @Test
    void the_report_writes_the_charts_it_links_and_removes_an_earlier_runs() throws Exception {
        Path report = dir.resolve("report.md");
        Path charts = dir.resolve("report-charts");
        Files.createDirectories(charts);
        Files.write(charts.resolve("gone.png"), PNG_SIGNATURE);
        Files.writeString(charts.resolve("notes.txt"), "kept");
        List<Path> written = result().write(dir.resolve("bench.json"), report);
        assertTrue(written.contains(charts.resolve("wake-latency.png").toAbsolutePath()), written.toString());
        assertTrue(Files.notExists(charts.resolve("gone.png")), "an earlier run's chart is left");
        assertTrue(Files.exists(charts.resolve("notes.txt")), "a file that is not a chart was removed");
        String md = Files.readString(report);
        assertTrue(md.contains("](report-charts/wake-latency.png)"), md);
    }

    private static boolean has(BufferedImage image, int rgb) {
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                if ((image.getRGB(x, y) & 0xffffff) == rgb) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A result of every charted scenario, the long mode a little faster than the short one. */
    static BenchResult result() {
        List<ScenarioResult> scenarios = new ArrayList<>();
        scenarios.add(scenario("idle", Map.of("waiters", 8), m -> {
            m.series("timeline", List.of(new double[] {0, m.mode() == Mode.SHORT ? 400 : 0},
                    new double[] {1, m.mode() == Mode.SHORT ? 410 : 2}));
            List<Object> sweep = new ArrayList<>();
            for (int w : new int[] {1, 8, 32}) {
                sweep.add(Map.of("waiters", w, "perSecond", m.mode() == Mode.SHORT ? 50.0 * w : 1.0));
            }
            m.detail("sweep", sweep);
        }));
        scenarios.add(scenario("wake", Map.of(), m -> m.latency("worker", samples(m.mode(), 0.3, 2000))
                .latency("orchestrator", samples(m.mode(), 0.5, 2000))));
        scenarios.add(scenario("timer", Map.of(), m -> m.latency("lateness", samples(m.mode(), -0.2, 300))));
        scenarios.add(scenario("lease", Map.of(), m -> m.latency("reclaim", samples(m.mode(), 4, 50))));
        // the long mode measured no statements: a bar left out, not a failure
        scenarios.add(scenario("wakes-per-item", Map.of(), m -> {
            m.metric("wakesPerItem", m.mode() == Mode.SHORT ? 40 : 1.2, "wakes", "wakes per item");
            if (m.mode() == Mode.SHORT) {
                m.metric("statementsPerItem", 90, "statements", "statements per item");
            }
        }));
        scenarios.add(scenario("burst-quiet", Map.of("items", 1000, "lockTimeoutSeconds", 5), m -> m.series(
                "timeline", List.of(new double[] {0, 900}, new double[] {1, m.mode() == Mode.SHORT ? 300 : 0.5}))));
        scenarios.add(scenario("throughput", Map.of(), m -> {
            m.metric("single.itemsPerSecond", m.mode() == Mode.SHORT ? 2000 : 2400, "items/s", "single");
            m.metric("batched.itemsPerSecond", m.mode() == Mode.SHORT ? 10_000 : 12_000, "items/s", "batched");
            m.latency("single.cycle", samples(m.mode(), 1, 500)).latency("batched.cycle", samples(m.mode(), 8, 500));
            m.detail("rawSqlReference", Map.of("singleItemsPerSecond", 3000, "batchedItemsPerSecond", 20_000));
        }));
        scenarios.add(scenario("fanout", Map.of(), m -> {
            m.metric("10ms.orchestrationsPerSecond", 40, "orchestrations/s", "10 ms");
            m.metric("0ms.orchestrationsPerSecond", 160, "orchestrations/s", "0 ms");
            m.latency("10ms.latency", samples(m.mode(), 60, 100)).latency("0ms.latency", samples(m.mode(), 20, 100));
        }));
        scenarios.add(scenario("notify-overhead", Map.of(), m -> {
            m.metric("enqueuesPerSecond", 5000, "enqueues/s", "all phases");
            m.metric("announcerTriggersDisabled.enqueuesPerSecond", 4900, "enqueues/s", "all phases");
            m.metric("transactional.enqueuesPerSecond", 4000, "enqueues/s", "all phases");
            List<Object> phases = new ArrayList<>();
            for (NotifyOverheadScenario.Arm a : NotifyOverheadScenario.Arm.values()) {
                phases.add(Map.of("arm", a.key, "enqueuesPerSecond", 4500));
                phases.add(Map.of("arm", a.key, "enqueuesPerSecond", 4700));
            }
            m.detail("phases", phases);
        }));
        // no samples without triggers: that curve is left out
        scenarios.add(scenario("sql-wake", Map.of(), m -> m.latency("worker", samples(m.mode(), 0.4, 200))
                .latency("orchestrator", samples(m.mode(), 0.6, 200))
                .latency("workerTriggersDisabled", new LatencyRecorder())));
        scenarios.add(scenario("sidecar", Map.of(), m -> m.metric("orchestrationsPerSecond", 30, "orchestrations/s",
                "sidecar").latency("orchestration", samples(m.mode(), 30, 100))));
        Bench.Options options = new Bench.Options(true, List.of(), "jdbc:postgresql://127.0.0.1/test", false,
                "pgdurable bench --quick");
        Map<String, Object> machine = new LinkedHashMap<>(Map.of("cores", 2));
        Map<String, Object> server = new LinkedHashMap<>(Map.of("version", "PostgreSQL 15", "otherSessionsAtStart", 0));
        return new BenchResult(Instant.parse("2025-01-01T00:00:00Z"), 60, Profile.QUICK, options, machine, server,
                Map.of("unit", "statements", "source", "pg_stat_statements"), scenarios, Map.of(),
                Targets.judge(Targets.all("statements"), Map.of()), Map.of());
    }

    private static ScenarioResult scenario(String name, Map<String, Object> settings,
                                           java.util.function.Consumer<ModeResult> fill) {
        ModeResult s = new ModeResult(Mode.SHORT);
        ModeResult l = new ModeResult(Mode.LONG);
        fill.accept(s);
        fill.accept(l);
        return new ScenarioResult(name, name, "", settings, s, l, List.of(), 1);
    }

    /** {@code n} samples from {@code typicalMs} upwards, a tail of ten times it; the long mode's a third faster. */
    private static LatencyRecorder samples(Mode mode, double typicalMs, int n) {
        LatencyRecorder r = new LatencyRecorder();
        double scale = mode == Mode.SHORT ? 1.5 : 1;
        for (int i = 0; i < n; i++) {
            double ms = typicalMs + Math.abs(typicalMs) * (i % 100 == 99 ? 10 : i % 7 / 7.0);
            r.recordNanos((long) (ms * scale * 1e6));
        }
        return r;
    }
}
