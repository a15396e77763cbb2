package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.node.NodeRuntime;
import io.pgdurable.postgres.TestDatabase;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code serve} driven by Microsoft's Durable Task JavaScript SDK ({@code @microsoft/durabletask-js} 0.4.0 from
 * npm), run by {@code node} on the scripts in {@code src/executable/test/js}. Node and the packages are prerequisites, not
 * options: {@link NodeRuntime} provisions what is missing (a pinned Node.js and {@code npm ci}) and, when it cannot,
 * these tests fail and say what to install.
 */
class JsSdkEndToEndTest {
    static final Path JS_DIR = Path.of(System.getProperty("user.dir"), "src", "executable", "test", "js");
    static final String SDK_VERSION = "0.4.0";

    /** What scenarios.js runs; each must report PASS. */
    private static final List<String> SCENARIOS = List.of("activity-chain", "fan-out-fan-in", "timer",
            "external-event", "sub-orchestration", "purge", "continue-as-new", "activity-failure", "rewind", "terminate",
            "suspend-resume", "history-stream", "restart-same-id", "restart-new-id", "instance-id-paging",
            "tags-round-trip");

    /** The node the scripts run with (absolute path), found or provisioned by {@link NodeRuntime}. */
    private static Path node;

    @BeforeAll
    static void nodeAndSdkAreInstalled() throws Exception {
        NodeRuntime.Runtime runtime = NodeRuntime.forDirectory(JS_DIR);
        node = runtime.node();
        Path sdk = JS_DIR.resolve("node_modules/@microsoft/durabletask-js/package.json");
        String manifest = Files.readString(sdk);
        Pattern pinned = Pattern.compile("\"version\"\\s*:\\s*\"" + Pattern.quote(SDK_VERSION) + "\"");
        if (!pinned.matcher(manifest).find()) {
            fail(sdk + " is not version " + SDK_VERSION + ": package-lock.json pins another; these tests and "
                    + "docs/durabletask.md are about " + SDK_VERSION);
        }
    }

    /** A node process on one of the scripts, its stdout lines queued, its stderr kept in a file under target/. */
    private static final class Node implements AutoCloseable {
        final Process process;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        final List<String> all = java.util.Collections.synchronizedList(new ArrayList<>());
        final Path stderr;

        Node(String script, String... args) throws IOException {
            Path logs = Path.of(System.getProperty("user.dir"), "target", "js-e2e");
            Files.createDirectories(logs);
            // One log per script and chosen scenario (the last argument, when there are several): runs do not
            // overwrite each other's.
            String run = script.replace(".js", "") + (args.length > 1 ? "-" + args[args.length - 1] : "");
            stderr = logs.resolve(run.replaceAll("[^A-Za-z0-9._-]", "_") + ".stderr.log");
            List<String> command = new ArrayList<>(List.of(node.toString(), script));
            command.addAll(List.of(args));
            process = new ProcessBuilder(command).directory(JS_DIR.toFile())
                    .redirectError(stderr.toFile()).start();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        all.add(line);
                        lines.add(line);
                    }
                } catch (IOException ended) {
                    // the process ended
                }
            }, "node-" + script);
            reader.setDaemon(true);
            reader.start();
        }

        /** The next stdout line, or a failure naming what was expected and what the script said. */
        String next(Duration timeout, String expecting) throws InterruptedException {
            String line = lines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (line == null) {
                fail("node printed no line within " + timeout + " while the test waited for " + expecting + "\n"
                        + diagnostics());
            }
            return line;
        }

        void send(String line) throws IOException {
            Writer w = new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            w.write(line + "\n");
            w.flush();
        }

        String diagnostics() {
            String err;
            try {
                List<String> l = Files.readAllLines(stderr);
                err = String.join("\n", l.subList(Math.max(0, l.size() - 60), l.size()));
            } catch (IOException e) {
                err = "(stderr unreadable: " + e + ")";
            }
            return "stdout:\n" + String.join("\n", all) + "\nstderr (last 60 lines of " + stderr + "):\n" + err;
        }

        @Override
        public void close() throws InterruptedException {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void the_java_script_sdk_runs_orchestrations_against_serve() throws Exception {
        try (SidecarHarness hub = new SidecarHarness("dt_js")) {
            try (Node node = new Node("scenarios.js", String.valueOf(hub.sidecar.port()))) {
                if (!node.process.waitFor(300, TimeUnit.SECONDS)) {
                    node.process.destroyForcibly();
                    fail("scenarios.js did not finish within 300 s\n" + node.diagnostics());
                }
                node.process.getInputStream().close();
                List<String> out;
                synchronized (node.all) {
                    out = List.copyOf(node.all);
                }
                for (String scenario : SCENARIOS) {
                    assertTrue(out.contains("PASS " + scenario), scenario + " did not pass\n" + node.diagnostics());
                }
                assertEquals(0, node.process.exitValue(), node.diagnostics());
            }
        }
    }

    /**
     * A JavaScript worker declaring concurrency 5, or nothing (as SDK 0.4.0 does), gets the five 500 ms activities of
     * a fan-out at once: the script
     * checks that all five ran side by side (within 1 s of each other's start, five at once in the worker) and that
     * the orchestration took well under the 2.5 s of one at a time.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"--concurrency=5", "--concurrency=0"})
    void a_java_script_worker_runs_five_activities_at_once_declaring_five_or_nothing(String declared) throws Exception {
        // --concurrency=0 declares nothing, as SDK 0.4.0 does: the sidecar knows the JavaScript SDK by its gRPC
        // library (WorkerAgent) and hands it several items at a time.
        try (SidecarHarness hub = new SidecarHarness("dt_js_conc");
             Node node = new Node("scenarios.js", String.valueOf(hub.sidecar.port()), declared,
                     "concurrency")) {
            String verdict = node.next(Duration.ofSeconds(120), "PASS/FAIL concurrency");
            assertEquals("PASS concurrency", verdict, node.diagnostics());
            assertTrue(node.process.waitFor(30, TimeUnit.SECONDS), "scenarios.js did not end\n" + node.diagnostics());
            assertEquals(0, node.process.exitValue(), node.diagnostics());
        }
    }

    @Test
    void a_java_script_activity_in_flight_when_serve_stops_gracefully_is_committed_and_not_run_again() throws Exception {
        Duration grace = Duration.ofSeconds(30);
        SidecarConfig[] used = new SidecarConfig[1];
        try (SidecarHarness hub = new SidecarHarness("dt_js_stop", TestDatabase.newSchemaName("dt_js_stop"), c -> {
            used[0] = c.withShutdownGrace(grace);
            return used[0];
        }); Node node = new Node("graceful-stop.js", String.valueOf(hub.sidecar.port()))) {
            String started = node.next(Duration.ofSeconds(60), "STARTED (the activity running)");
            assertTrue(started.startsWith("STARTED "), started + "\n" + node.diagnostics());

            SidecarHarness.GracefulStop stop = hub.stopInBackground();
            assertTrue(hub.sidecar.awaitStopping(Duration.ofSeconds(30)), "the stop never began");
            assertTrue(stop.running(), "the stop did not wait for the activity the JavaScript worker holds");

            node.send("RELEASE"); // the activity finishes now, inside the grace period
            long stopMillis = stop.await(Duration.ofSeconds(25));
            assertTrue(stopMillis >= 0, "the stop did not end once nothing was outstanding\n" + node.diagnostics());
            assertTrue(stopMillis < grace.toMillis() / 2, "the stop took " + stopMillis
                    + " ms: it waited out the grace period instead of taking the activity's result\n"
                    + node.diagnostics());

            try (SidecarServer again = SidecarServer.start(hub.provider, used[0].withPort(0))) {
                node.send("RESTARTED " + again.port());
                String verdict = node.next(Duration.ofSeconds(90), "PASS/FAIL graceful-stop");
                assertNotNull(verdict);
                assertEquals("PASS graceful-stop", verdict, node.diagnostics());
            }
        }
    }
}
