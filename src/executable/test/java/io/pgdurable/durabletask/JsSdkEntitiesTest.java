package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.node.NodeRuntime;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Durable entities on {@code serve} driven by the JavaScript SDK ({@code src/executable/test/js/entities.js}): client signals
 * and reads, calls and signals from orchestrations with their responses, an entity signalling another, concurrent
 * signals serialised per entity, queries and storage cleaning, a critical section over two entities holding back
 * a signal from outside it, the locks of an orchestration that failed inside its section released, and the clear failure of a scheduled
 * signal from an orchestration (not supported).
 */
class JsSdkEntitiesTest {
    private static final Logger LOG = LoggerFactory.getLogger(JsSdkEntitiesTest.class);
    private static final List<String> SCENARIOS = List.of("client-signal-get", "orchestration-call-signal",
            "entity-signals-entity", "serialised-concurrent-signals", "query-and-clean", "critical-section",
            "lock-released-when-its-orchestration-fails", "scheduled-signal-from-orchestration-fails-clearly");

    private static Path node;

    @BeforeAll
    static void nodeAndSdkAreInstalled() throws Exception {
        JsSdkEndToEndTest.nodeAndSdkAreInstalled();
        node = NodeRuntime.forDirectory(JsSdkEndToEndTest.JS_DIR).node();
    }

    @Test
    void the_java_script_sdk_uses_durable_entities_on_serve() throws Exception {
        try (SidecarHarness hub = new SidecarHarness("dt_js_ent")) {
            Path logs = Path.of(System.getProperty("user.dir"), "target", "js-e2e");
            Files.createDirectories(logs);
            Path stdout = logs.resolve("entities.stdout.log");
            Path stderr = logs.resolve("entities.stderr.log");
            Process p = new ProcessBuilder(node.toString(), "entities.js", String.valueOf(hub.sidecar.port()))
                    .directory(JsSdkEndToEndTest.JS_DIR.toFile()).redirectOutput(stdout.toFile())
                    .redirectError(stderr.toFile()).start();
            if (!p.waitFor(240, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
                fail("entities.js did not finish within 240 s\n" + diagnostics(stdout, stderr));
            }
            List<String> out = Files.readAllLines(stdout, StandardCharsets.UTF_8);
            out.stream().filter(l -> l.startsWith("MEASURE ")).forEach(l -> LOG.info("entities.js {}", l));
            for (String scenario : SCENARIOS) {
                assertTrue(out.contains("PASS " + scenario), scenario + " did not pass\n"
                        + diagnostics(stdout, stderr));
            }
            assertEquals(0, p.exitValue(), diagnostics(stdout, stderr));
        }
    }

    private static String diagnostics(Path stdout, Path stderr) {
        try {
            List<String> err = Files.readAllLines(stderr, StandardCharsets.UTF_8);
            return "stdout:\n" + Files.readString(stdout, StandardCharsets.UTF_8) + "\nstderr (last 60 lines):\n"
                    + String.join("\n", err.subList(Math.max(0, err.size() - 60), err.size()));
        } catch (java.io.IOException e) {
            return "(output unreadable: " + e + ")";
        }
    }
}
