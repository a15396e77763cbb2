package io.pgdurable.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.pgdurable.cli.PgDurableCli;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.Json;
import java.awt.image.BufferedImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code pgdurable bench --quick} on the test database and checks the harness, not the speed: every scenario is
 * in the JSON for both modes, every target is judged met or missed with numbers, and the Markdown report links
 * charts that exist. No assertion on any measured figure.
 */
class BenchCommandTest {
    @TempDir
    static Path dir;

    private static Map<String, Object> doc;
    private static String markdown;
    private static String output;
    private static Path report;

    @BeforeAll
    @Timeout(value = 8, unit = TimeUnit.MINUTES)
    static void runQuickBench() throws Exception {
        String url = TestDatabase.url();
        assumeTrue(loopback(url), "the benchmark test runs only against a loopback database");
        // --out holds what is named relative to it (the report) and nothing named absolutely (the JSON).
        Path json = dir.resolve("elsewhere/bench.json");
        Path results = dir.resolve("results");
        report = results.resolve("report/bench.md");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = PgDurableCli.run(new PrintWriter(out), new PrintWriter(err), "bench", "--quick", "--db", url,
                "--out", results.toString(), "--json", json.toString(), "--report", "report/bench.md");
        output = out.toString();
        assertEquals(0, code, "bench failed:\n" + out + "\n" + err);
        try (var files = Files.walk(results)) {
            List<Path> outside = files.filter(Files::isRegularFile)
                    .filter(f -> !f.startsWith(results.resolve("report"))).toList();
            assertEquals(List.of(), outside, "only the report and its charts belong in --out here");
        }
        assertTrue(Files.isDirectory(results.resolve("report/bench-charts")), "charts beside the report");
        doc = Json.parseObject(Files.readString(json));
        markdown = Files.readString(report);
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void by_default_the_json_the_report_and_its_charts_go_into_the_out_folder() throws Exception {
        Path results = dir.resolve("defaults");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = PgDurableCli.run(new PrintWriter(out), new PrintWriter(err), "bench", "--quick", "--scenarios",
                "idle", "--db", TestDatabase.url(), "--out", results.toString());
        assertEquals(0, code, "bench failed:\n" + out + "\n" + err);
        assertTrue(Files.isRegularFile(results.resolve("bench.json")), out.toString());
        String md = Files.readString(results.resolve("report.md"));
        assertTrue(md.contains("(bench.json)") || md.contains("`bench.json`"), "the report names its JSON:\n" + md);
        try (var charts = Files.list(results.resolve("report-charts"))) {
            assertFalse(charts.filter(f -> f.toString().endsWith(".png")).toList().isEmpty(), "no chart");
        }
        assertTrue(out.toString().contains("wrote " + results.resolve("bench.json").toAbsolutePath()), out.toString());
    }

    private static boolean loopback(String jdbcUrl) throws Exception {
        String host = URI.create(jdbcUrl.substring("jdbc:".length())).getHost();
        return host != null && InetAddress.getByName(host).isLoopbackAddress();
    }

    @Test
    void progress_is_printed_while_it_runs() {
        for (String s : Bench.SCENARIOS) {
            assertTrue(output.contains("== " + s + ":"), "no progress line for " + s + " in:\n" + output);
        }
        assertTrue(output.contains("short done") && output.contains("long done"), output);
    }

    @Test
    @SuppressWarnings("unchecked")
    void json_holds_every_scenario_for_both_modes_with_ratios() {
        Map<String, Object> scenarios = (Map<String, Object>) doc.get("scenarios");
        assertEquals(new HashSet<>(Bench.SCENARIOS), scenarios.keySet());
        assertTrue(((Map<String, Object>) doc.get("failures")).isEmpty(), "failures: " + doc.get("failures"));
        for (String name : Bench.SCENARIOS) {
            Map<String, Object> s = (Map<String, Object>) scenarios.get(name);
            for (String mode : List.of("short", "long")) {
                Map<String, Object> m = (Map<String, Object>) s.get(mode);
                assertNotNull(m, name + " has no " + mode + " results");
                Map<String, Object> metrics = (Map<String, Object>) m.get("metrics");
                Map<String, Object> latencies = (Map<String, Object>) m.get("latencies");
                assertFalse(metrics.isEmpty() && latencies.isEmpty(), name + "/" + mode + " measured nothing");
                metrics.forEach((k, v) -> assertTrue(((Map<String, Object>) v).get("value") instanceof Number,
                        name + "/" + mode + " metric " + k + " has no number: " + v));
                latencies.forEach((k, v) -> {
                    Map<String, Object> l = (Map<String, Object>) v;
                    if (((Number) l.get("count")).longValue() > 0) {
                        assertTrue(l.get("p50") instanceof Number && l.get("p99") instanceof Number,
                                name + "/" + mode + " latency " + k + ": " + l);
                    }
                });
            }
            assertFalse(((Map<String, Object>) s.get("ratiosLongToShort")).isEmpty(), name + " has no ratios");
            assertTrue(s.get("serverCheckpointsStarted") instanceof Number n && n.longValue() >= 0,
                    name + ": no count of the server's checkpoints during it: " + s.get("serverCheckpointsStarted"));
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void drain_states_its_untimed_warm_up_and_times_every_arm_in_every_round() {
        Map<String, Object> s = (Map<String, Object>) ((Map<String, Object>) doc.get("scenarios")).get("drain");
        Map<String, Object> settings = (Map<String, Object>) s.get("settings");
        // quick: 1,000 items, so the warm-up is the floor of one batch per consumer
        assertEquals(400, ((Number) settings.get("warmUpItems")).intValue(), settings.toString());
        for (String mode : List.of("short", "long")) {
            Map<String, Object> details = (Map<String, Object>) ((Map<String, Object>) s.get(mode)).get("details");
            for (String arm : List.of("rawSingle", "single", "ackNext", "rawBatched", "batched",
                    "batchedGroupedAcks")) {
                List<Object> rounds = (List<Object>) details.get(arm + ".rounds");
                assertEquals(1, rounds.size(), mode + " " + arm + ": " + rounds);
                assertTrue(((Number) rounds.get(0)).doubleValue() > 0, mode + " " + arm + ": " + rounds);
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void wake_keeps_its_warm_up_apart_and_lists_the_slowest_remote_samples_in_order() {
        Map<String, Object> s = (Map<String, Object>) ((Map<String, Object>) doc.get("scenarios")).get("wake");
        assertEquals(2, ((Number) ((Map<String, Object>) s.get("settings")).get("warmUpRounds")).intValue());
        for (String mode : List.of("short", "long")) {
            Map<String, Object> m = (Map<String, Object>) s.get(mode);
            Map<String, Object> details = (Map<String, Object>) m.get("details");
            Map<String, Object> warmUp = (Map<String, Object>) details.get("warmUpSamples");
            assertEquals(8, ((Number) warmUp.get("count")).intValue(), mode + ": two rounds of four series");
            Map<String, Object> remote = (Map<String, Object>) ((Map<String, Object>) m.get("latencies"))
                    .get("workerFromOtherProvider");
            assertEquals(20, ((Number) remote.get("count")).intValue(), mode + ": the warm-up is not recorded");
            List<Object> slowest = (List<Object>) details.get("slowestFromOtherProvider");
            assertEquals(8, slowest.size(), mode + ": " + slowest);
            double previous = Double.MAX_VALUE;
            for (Object o : slowest) {
                Map<String, Object> sample = (Map<String, Object>) o;
                double ms = ((Number) sample.get("millis")).doubleValue();
                assertTrue(ms <= previous, mode + ": slowest first: " + slowest);
                previous = ms;
                int index = ((Number) sample.get("sample")).intValue();
                assertTrue(index >= 0 && index < 20, mode + ": " + sample);
            }
            // the max is its histogram bucket's upper end: up to 0.1 % above the sample (and both are rounded)
            double slowestMs = ((Number) ((Map<String, Object>) slowest.get(0)).get("millis")).doubleValue();
            assertEquals(((Number) remote.get("max")).doubleValue(), slowestMs, 0.001 + slowestMs * 0.001,
                    mode + ": the slowest listed is the series' max");
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void fanout_counts_the_long_poll_wakes_per_queue() {
        Map<String, Object> s = (Map<String, Object>) ((Map<String, Object>) doc.get("scenarios")).get("fanout");
        Map<String, Object> details = (Map<String, Object>) ((Map<String, Object>) s.get("long")).get("details");
        for (String config : List.of("10ms", "10ms-ack-then-fetch", "0ms")) {
            Map<String, Object> signals = (Map<String, Object>) details.get(config + ".longPollSignals");
            assertNotNull(signals, config + ": " + details.keySet());
            long perQueue = ((Number) signals.get("wakes.orchestrator")).longValue()
                    + ((Number) signals.get("wakes.worker")).longValue();
            assertEquals(((Number) signals.get("wakes")).longValue(), perQueue, config + ": " + signals);
            assertTrue(((Number) signals.get("wakes.orchestrator")).longValue() > 0, config + ": " + signals);
        }
        Map<String, Object> shortDetails = (Map<String, Object>) ((Map<String, Object>) s.get("short"))
                .get("details");
        assertFalse(shortDetails.containsKey("0ms.longPollSignals"), "short polling has no long-poll signals");
    }

    @Test
    @SuppressWarnings("unchecked")
    void throughput_and_fanout_report_medians_of_rounds_and_each_rounds_ratio() {
        for (String name : List.of("throughput", "fanout")) {
            Map<String, Object> s = (Map<String, Object>) ((Map<String, Object>) doc.get("scenarios")).get(name);
            Map<String, Object> longMode = (Map<String, Object>) s.get("long");
            Map<String, Object> details = (Map<String, Object>) longMode.get("details");
            List<Object> rounds = (List<Object>) details.get("rounds");
            assertEquals(2, rounds.size(), name + ": two rounds in the quick profile");
            String figure = name.equals("fanout") ? "0ms.orchestrationsPerSecond" : "single.itemsPerSecond";
            double a = ((Number) ((Map<String, Object>) rounds.get(0)).get(figure)).doubleValue();
            double b = ((Number) ((Map<String, Object>) rounds.get(1)).get(figure)).doubleValue();
            double median = ((Number) ((Map<String, Object>) ((Map<String, Object>) longMode.get("metrics"))
                    .get(figure)).get("value")).doubleValue();
            assertEquals((a + b) / 2, median, 0.01 * median + 1e-6, name + ": the median of two rounds");
            List<Object> ratios = (List<Object>) ((Map<String, Object>) details.get("roundRatios")).get(figure);
            assertEquals(2, ratios.size(), name + ": one ratio per round");
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void metrics_overhead_counts_both_arms_in_every_phase_and_alternates_their_schemas() {
        Map<String, Object> s = (Map<String, Object>) ((Map<String, Object>) doc.get("scenarios"))
                .get("metrics-overhead");
        List<Object> phases = (List<Object>) ((Map<String, Object>) ((Map<String, Object>) s.get("short"))
                .get("details")).get("phases");
        assertEquals(4, phases.size(), "one round of four phases in the quick profile: " + phases);
        List<Object> onSchemas = new java.util.ArrayList<>();
        for (Object o : phases) {
            Map<String, Object> ph = (Map<String, Object>) o;
            onSchemas.add(ph.get("onSchema"));
            double off = ((Number) ph.get("offItemsPerSecond")).doubleValue();
            double on = ((Number) ph.get("onItemsPerSecond")).doubleValue();
            assertTrue(off > 0 && on > 0, "an arm did nothing in a phase: " + ph);
            assertEquals(on / off, ((Number) ph.get("ratio")).doubleValue(), 0.01 * on / off, ph.toString());
        }
        assertEquals(List.of(2L, 1L, 1L, 2L), onSchemas.stream().map(o -> ((Number) o).longValue()).toList(),
                "the binder's schema alternates mirrored");
    }

    @Test
    @SuppressWarnings("unchecked")
    void json_records_machine_database_and_server_side_counting() {
        Map<String, Object> machine = (Map<String, Object>) doc.get("machine");
        assertTrue(((Number) machine.get("cores")).intValue() > 0);
        assertTrue(((Number) machine.get("memoryBytes")).longValue() > 0);
        assertNotNull(machine.get("jvm"));
        assertNotNull(machine.get("os"));
        Map<String, Object> db = (Map<String, Object>) doc.get("database");
        assertTrue(String.valueOf(db.get("version")).startsWith("PostgreSQL"), String.valueOf(db.get("version")));
        assertFalse(((Map<String, Object>) db.get("settings")).isEmpty());
        Map<String, Object> counter = (Map<String, Object>) db.get("statementCounter");
        assertTrue(List.of("pg_stat_statements", "pg_stat_database").contains(counter.get("source")));
        assertFalse(String.valueOf(doc.get("command")).contains("password="), "command line not redacted");
    }

    @Test
    @SuppressWarnings("unchecked")
    void every_target_is_met_or_missed_with_its_figure() {
        List<Object> targets = (List<Object>) doc.get("targets");
        Set<String> ids = new HashSet<>();
        for (Object o : targets) {
            Map<String, Object> t = (Map<String, Object>) o;
            ids.add((String) t.get("id"));
            String status = (String) t.get("status");
            assertTrue(t.get("limit") instanceof Number, "target without a limit: " + t);
            assertNotNull(t.get("distance"), "target without how far: " + t);
            if (!BatchedThroughput.available() && "throughput-batched".equals(t.get("id"))) {
                assertEquals("not-measured", status, "batched throughput without the batching APIs: " + t);
                assertTrue(String.valueOf(t.get("distance")).contains("batching APIs"), t.toString());
                continue;
            }
            assertTrue(status.equals("met") || status.equals("missed"), "target not judged: " + t);
            assertTrue(t.get("measured") instanceof Number, "target without its figure: " + t);
            assertEquals(status.equals("met"), t.get("met"), t.toString());
        }
        for (Target t : Targets.all("statements")) {
            assertTrue(ids.contains(t.id()), "target missing from the JSON: " + t.id());
        }
        assertEquals(Targets.all("statements").size(), targets.size());
    }

    @Test
    void markdown_states_every_target_and_links_existing_png_charts() throws Exception {
        for (Target t : Targets.all("statements")) {
            assertTrue(markdown.contains(t.text().replace("|", "\\|")), "target not in the report: " + t.text());
        }
        assertTrue(markdown.contains("met") && markdown.contains("## Machine and database"), markdown);
        Matcher m = Pattern.compile("!\\[[^\\]]*\\]\\(([^)]+\\.png)\\)").matcher(markdown);
        List<String> links = new ArrayList<>();
        while (m.find()) {
            links.add(m.group(1));
        }
        assertTrue(links.size() >= 10, "expected a chart per scenario at least, found " + links);
        for (String link : links) {
            Path png = report.getParent().resolve(link);
            assertTrue(Files.isRegularFile(png), "the report links a missing chart: " + link);
            BufferedImage image = ImageIO.read(png.toFile());
            assertNotNull(image, link + " is not an image");
            assertTrue(image.getWidth() >= 800 && image.getHeight() >= 400, link + " is " + image.getWidth() + "×"
                    + image.getHeight());
        }
        for (Object c : (List<?>) doc.get("charts")) {
            String file = String.valueOf(((Map<?, ?>) c).get("file"));
            assertTrue(links.contains(file), "chart in the JSON but not in the report: " + file);
        }
    }
}
