package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgdurable.metrics.PgDurableMetrics;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code /health} answers 503 when the listener or the database is down, on a real provider over loopback HTTP. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MetricsEndpointTest {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> send(String method, String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
                .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void health_is_503_while_the_listener_cannot_connect_and_once_the_provider_is_closed() throws Exception {
        String schema = TestDatabase.newSchemaName("metrics_health");
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort(); // nothing listens here once it is closed
        }
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        PostgresProvider provider = PostgresProvider.create(TestDatabase.config(schema)
                .longPolling(true)
                .listenerUrl("jdbc:postgresql://127.0.0.1:" + closedPort + "/test")
                .metrics(new PgDurableMetrics(registry))
                .build());
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), registry, provider::health)) {
            String base = "http://127.0.0.1:" + endpoint.port();
            HttpResponse<String> down = send("GET", base + "/health");
            assertEquals(503, down.statusCode(), down.body());
            assertEquals("{\"status\":\"down\",\"database\":\"up\",\"listener\":\"down\"}", down.body().trim());

            HttpResponse<String> head = send("HEAD", base + "/health");
            assertEquals(503, head.statusCode());
            assertEquals("", head.body());

            HttpResponse<String> metrics = send("GET", base + "/metrics");
            assertEquals(200, metrics.statusCode());
            assertTrue(metrics.body().contains("pgdurable_listener_up{schema=\"" + schema + "\"} 0.0"),
                    metrics.body());

            provider.close();
            HttpResponse<String> closed = send("GET", base + "/health");
            assertEquals(503, closed.statusCode(), closed.body());
            assertTrue(closed.body().startsWith("{\"status\":\"down\",\"database\":\"down\",\"error\":\"health: the "
                    + "provider is closed\""), closed.body());
        } finally {
            provider.close();
            TestDatabase.dropSchema(schema);
        }
    }
}
