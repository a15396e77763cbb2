package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.WorkItem;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code serve --metrics-port} over HTTP on loopback: {@code /metrics} answers Prometheus text whose pgdurable
 * meters move with what the sidecar's provider sees, {@code /health} answers 200 with the database and the listener
 * up, and the endpoint goes away with the sidecar.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ServeMetricsTest {
    private static final Pattern METRICS_AT = Pattern.compile("Metrics on http://127\\.0\\.0\\.1:(\\d+)/metrics");
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void serve_exposes_prometheus_metrics_and_health_over_http() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_metrics");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        Thread serve = new Thread(() -> exit.complete(PgDurableCli.run(new PrintWriter(out, true),
                new PrintWriter(err, true), "serve", "--db", TestDatabase.url(), "--schema", schema, "--port", "0",
                "--metrics-port", "0")), "serve-metrics-under-test");
        serve.start();
        int port = -1;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Matcher m;
            while (!(m = METRICS_AT.matcher(out.toString())).find() && !exit.isDone()
                    && System.nanoTime() < deadline) {
                Thread.sleep(25); // polls serve's output for its port (observable state, bounded)
            }
            assertTrue(m.find(0), "serve did not report its metrics port; out=" + out + " err=" + err);
            port = Integer.parseInt(m.group(1));
            String base = "http://127.0.0.1:" + port;

            HttpResponse<String> health = awaitResponse(base + "/health", r -> r.statusCode() == 200);
            assertEquals("application/json", health.headers().firstValue("Content-Type").orElse(""));
            assertEquals("{\"status\":\"up\",\"database\":\"up\",\"listener\":\"up\"}", health.body().trim());

            String first = get(base + "/metrics").body();
            assertEquals(1.0, value(first, "pgdurable_listener_up", Map.of("schema", schema)).orElseThrow());
            assertEquals(0.0, value(first, "pgdurable_operations_seconds_count", Map.of("schema", schema,
                    "operation", "enqueue", "queue", "worker", "outcome", "ok")).orElseThrow(),
                    "timers are registered before their first call");
            assertTrue(value(first, "hikaricp_connections", Map.of("pool", "pgdurable-" + schema)).isPresent(),
                    "the owned pool's meters");
            assertTrue(first.contains("\njvm_memory_used_bytes{"), "the JVM's meters");
            assertTrue(first.contains("# HELP pgdurable_wakes_total "), "meters carry their description");
            double notifications = value(first, "pgdurable_notifications_received_total", Map.of("schema", schema))
                    .orElseThrow();

            // Another process enqueues: serve's listener hears of it; no worker is connected, so the item stays.
            try (PostgresProvider other = PostgresProvider.create(TestDatabase.config(schema).build())) {
                other.enqueueForWorker(new WorkItem.ActivityExecute("inst", 1, 1, "A", "{}"));
            }
            String later = awaitResponse(base + "/metrics", r -> value(r.body(),
                    "pgdurable_notifications_received_total", Map.of("schema", schema)).orElse(0) > notifications)
                    .body();
            assertEquals(0.0, value(later, "pgdurable_operations_seconds_count", Map.of("schema", schema,
                    "operation", "enqueue", "queue", "worker", "outcome", "ok")).orElseThrow(),
                    "the other provider enqueued, not serve's");
            // The first scrape read the depths (0): the next read comes within the refresh interval (5 s).
            awaitResponse(base + "/metrics", r -> value(r.body(), "pgdurable_queue_depth", Map.of("schema", schema,
                    "queue", "worker")).orElse(-1) == 1.0);
            assertEquals("text/plain; version=0.0.4; charset=utf-8", get(base + "/metrics").headers()
                    .firstValue("Content-Type").orElse(""));

            assertEquals(405, http.send(HttpRequest.newBuilder(URI.create(base + "/metrics"))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode());
            assertEquals(404, get(base + "/nothing-here").statusCode());
            assertEquals(404, get(base + "/metricsx").statusCode());
        } finally {
            serve.interrupt();
            Integer code = exit.get(30, TimeUnit.SECONDS);
            assertEquals(0, code, "err=" + err);
            TestDatabase.dropSchema(schema);
        }
        String stopped = "http://127.0.0.1:" + port + "/health";
        assertThrows(ConnectException.class, () -> get(stopped), "the endpoint closes with the sidecar");
    }

    @Test
    void a_metrics_port_out_of_range_is_a_one_line_usage_error() {
        PgDurableCliTest.Result r = PgDurableCliTest.cli("serve", "--db", TestDatabase.url(), "--metrics-port",
                "70000");
        assertEquals(2, r.code(), r.all());
        assertTrue(r.err().startsWith("error: --metrics-port must be in 0..65535, was 70000"), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }

    @Test
    void a_metrics_port_in_use_is_a_one_line_error() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_metrics_busy");
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            PgDurableCliTest.Result r = PgDurableCliTest.cli("serve", "--db", TestDatabase.url(), "--schema", schema,
                    "--port", "0", "--metrics-port", String.valueOf(taken.getLocalPort()));
            assertEquals(1, r.code(), r.all());
            assertEquals("error: the metrics port 127.0.0.1:" + taken.getLocalPort() + " is in use (another process "
                    + "listens there): stop that process or choose another port with --metrics-port PORT "
                    + "(--metrics-port 0 picks a free one)", r.err().strip());
            assertEquals(1, r.err().strip().lines().count(), r.err());
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    private HttpResponse<String> get(String url) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Asks {@code url} until the answer satisfies {@code ok} (bounded; the listener connects in the background). */
    private HttpResponse<String> awaitResponse(String url, Predicate<HttpResponse<String>> ok) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        HttpResponse<String> r = get(url);
        while (!ok.test(r)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no satisfying answer from " + url + " within 20 s; last: "
                        + r.statusCode() + " " + r.body());
            }
            Thread.sleep(50);
            r = get(url);
        }
        return r;
    }

    /** The value of the sample {@code name{...}} whose labels include {@code labels}, from Prometheus text. */
    static OptionalDouble value(String text, String name, Map<String, String> labels) {
        for (String line : text.split("\n")) {
            if (!line.startsWith(name + "{")) {
                continue;
            }
            int close = line.lastIndexOf('}');
            String labelText = line.substring(name.length() + 1, close);
            boolean all = labels.entrySet().stream().allMatch(e -> labelText.contains(e.getKey() + "=\""
                    + e.getValue() + "\""));
            if (all) {
                return OptionalDouble.of(Double.parseDouble(line.substring(close + 1).trim().split(" ")[0]));
            }
        }
        return OptionalDouble.empty();
    }
}
