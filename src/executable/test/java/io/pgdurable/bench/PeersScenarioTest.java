package io.pgdurable.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.Json;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The {@code peers} scenario against the test database with tiny counts: graphile-worker (Node.js and its packages
 * provisioned by {@link io.pgdurable.node.NodeRuntime} when missing; a failure to provision fails the test) and
 * pgdurable both drain everything exactly once (the scenario throws otherwise), the report carries both arms' figures
 * and their ratios, and the graphile-worker that ran is the pinned one. No assertion on any measured speed.
 */
class PeersScenarioTest {
    private static final PeersScenario.Counts TINY = new PeersScenario.Counts(300, 30, 2, 1);

    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    @SuppressWarnings("unchecked")
    void both_arms_drain_exactly_once_and_the_report_compares_them_with_the_pinned_graphile_worker() throws Exception {
        String url = TestDatabase.url();
        String runId = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 7);
        StringWriter progress = new StringWriter();
        ScenarioResult s;
        Map<String, Object> counterInfo;
        try (ServerStatementCounter counter = ServerStatementCounter.open(url)) {
            counterInfo = counter.describe();
            BenchContext ctx = new BenchContext(url, Profile.QUICK, new Progress(new PrintWriter(progress)), counter,
                    runId);
            try {
                s = new PeersScenario(TINY).run(ctx);
            } finally {
                ctx.closeWaits();
                assertEquals(List.of(), ctx.dropSchemas(), "schemas left behind");
            }
        }
        assertEquals(0, schemasOfRun(url, runId), "the run's schemas (graphile-worker's among them) are dropped");
        assertTrue(ProcessHandle.current().children().noneMatch(PeersScenarioTest::isPeer),
                "the graphile-worker child process outlived the scenario");

        String pinned = pinnedGraphileVersion();
        assertEquals(pinned, s.settings().get("graphileWorkerVersion"), "not the graphile-worker the lock file pins");
        assertTrue(s.description().contains("graphile-worker " + pinned), s.description());

        for (Mode m : Mode.values()) {
            ModeResult r = s.mode(m);
            for (String f : List.of("drainSingle.jobsPerSecond", "drainBatched.jobsPerSecond")) {
                assertTrue(r.value(f) > 0, m + " " + f + ": " + r.value(f));
            }
            assertEquals(TINY.wakeJobs(), r.latencies().get("wake").count(), m + " wake samples");
            assertEquals(TINY.sporadicJobs(), r.latencies().get("wakeSporadic").count(), m + " sporadic samples");
            assertEquals(1, ((List<?>) r.details().get("drainSingle.reps")).size(), m + " per-rep figures");
        }
        ModeResult pgdurable = s.longMode();
        for (String f : List.of("drainSingle.ratioToGraphile", "drainBatched.ratioToGraphile")) {
            assertTrue(pgdurable.value(f) > 0 && Double.isFinite(pgdurable.value(f)), f + ": " + pgdurable.value(f));
        }
        // A wake sample is negative when the consumer had the item before the writer's call returned.
        for (String f : List.of("wake.p50RatioToGraphile", "wake.p99RatioToGraphile",
                "wakeSporadic.p99RatioToGraphile", "wakeSporadicSql.p99RatioToGraphile")) {
            assertTrue(Double.isFinite(pgdurable.value(f)), f + ": " + pgdurable.value(f));
        }
        assertEquals(s.ratio("drainSingle.jobsPerSecond"), pgdurable.value("drainSingle.jobsPerSecond")
                / s.shortMode().value("drainSingle.jobsPerSecond"), 1e-9);
        assertEquals(List.of("pgdurable first"), pgdurable.details().get("order"));
        assertTrue(s.ratios().containsKey("wake.p99"), s.ratios().toString());
        assertEquals(TINY.sporadicJobs(), pgdurable.latencies().get("wakeSporadicSql").count(),
                "the plain-SQL writer's sporadic samples");

        List<TargetResult> targets = Targets.judge(Targets.all(String.valueOf(counterInfo.get("unit"))),
                Map.of(PeersScenario.NAME, s)).stream().filter(t -> t.target().scenario().equals("peers")).toList();
        assertEquals(List.of("peer-drain-single", "peer-drain-batched", "peer-wake-p99", "peer-wake-remote-p50",
                        "peer-wake-remote-p99", "peer-wake-sporadic-p99", "peer-wake-sporadic-sql-p99"),
                targets.stream().map(t -> t.target().id()).toList());
        for (TargetResult t : targets) {
            assertNotEquals(TargetResult.Status.NOT_MEASURED, t.status(), t.target().id() + ": " + t.reason());
        }

        BenchResult result = new BenchResult(Instant.now(), s.seconds(), Profile.QUICK,
                new Bench.Options(true, List.of("peers"), "test database", false, "test"), MachineInfo.describe(),
                ServerInfo.describe(url), counterInfo, List.of(s), Map.of(), targets, Map.of());
        String md = MarkdownReport.render(result, null, List.of(), null);
        assertTrue(md.contains("| figure | graphile-worker | pgdurable | pgdurable ÷ graphile-worker |"), md);
        assertTrue(md.contains("graphileWorkerVersion " + pinned), md);
        Map<String, Object> json = JsonReport.toJson(result, null, List.of());
        Map<String, Object> peers = (Map<String, Object>) ((Map<String, Object>) json.get("scenarios")).get("peers");
        for (String column : List.of("short", "long")) {
            Map<String, Object> metrics = (Map<String, Object>) ((Map<String, Object>) peers.get(column))
                    .get("metrics");
            assertTrue(metrics.containsKey("drainSingle.jobsPerSecond") && metrics.containsKey(
                    "drainBatched.jobsPerSecond"), column + ": " + metrics.keySet());
        }
        assertTrue(((Map<String, Object>) peers.get("ratiosLongToShort")).get("drainBatched.jobsPerSecond")
                instanceof Number, peers.get("ratiosLongToShort").toString());
    }

    private static boolean isPeer(ProcessHandle p) {
        return p.info().commandLine().map(c -> c.contains("peer.mjs")).orElse(false);
    }

    /** graphile-worker's version as the lock file in the jar pins it (and package.json names it exactly). */
    @SuppressWarnings("unchecked")
    private static String pinnedGraphileVersion() throws Exception {
        String lock;
        String manifest;
        try (InputStream l = PeersScenarioTest.class.getResourceAsStream(
                "/io/pgdurable/bench/graphile/package-lock.json");
             InputStream m = PeersScenarioTest.class.getResourceAsStream(
                     "/io/pgdurable/bench/graphile/package.json")) {
            lock = new String(l.readAllBytes(), StandardCharsets.UTF_8);
            manifest = new String(m.readAllBytes(), StandardCharsets.UTF_8);
        }
        Map<String, Object> packages = (Map<String, Object>) Json.parseObject(lock).get("packages");
        String version = String.valueOf(((Map<String, Object>) packages.get("node_modules/graphile-worker"))
                .get("version"));
        assertEquals(version, ((Map<String, Object>) Json.parseObject(manifest).get("dependencies"))
                .get("graphile-worker"), "package.json and the lock file disagree");
        assertTrue(version.startsWith("0.18."), "the peer is graphile-worker 0.18.x: " + version);
        return version;
    }

    private static int schemasOfRun(String url, String runId) throws Exception {
        try (Connection c = DriverManager.getConnection(url);
             PreparedStatement ps = c.prepareStatement(
                     "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgdb\\_' || ? || '\\_%'")) {
            ps.setString(1, runId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
