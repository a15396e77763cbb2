package io.pgdurable.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgdurable.postgres.ProviderHealth;
import io.pgdurable.spi.Json;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A small HTTP endpoint on the JDK's own server: {@code GET /metrics} answers the registry's Prometheus text,
 * {@code GET /health} answers 200 when the provider is healthy and 503 when not, with a short JSON body saying what
 * is up ({@code {"status":"up","database":"up","listener":"up"}}). There is no authentication: bind it to loopback
 * unless the network is trusted.
 *
 * <p>A health check waits at most {@link #HEALTH_TIMEOUT} for the database: one that has not answered by then is
 * reported down, and requests arriving while a check is still out share it instead of starting more.
 */
public final class MetricsEndpoint implements AutoCloseable {
    /** The longest a {@code /health} request waits for the database's answer. */
    public static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(2);
    static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
    private static final String NOT_FOUND = "not found: try /metrics or /health\n";
    private static final int MAX_ERROR_CHARS = 300;

    private final HttpServer server;
    private final ExecutorService handlers;
    private final ExecutorService checks;
    private final PrometheusMeterRegistry registry;
    private final Supplier<ProviderHealth> health;
    /** The health check in flight or last finished; guarded by {@code this}. */
    private CompletableFuture<ProviderHealth> check;

    private MetricsEndpoint(HttpServer server, PrometheusMeterRegistry registry, Supplier<ProviderHealth> health) {
        this.server = server;
        this.registry = registry;
        this.health = health;
        this.handlers = Executors.newFixedThreadPool(4, daemon("pgdurable-metrics-http"));
        this.checks = Executors.newSingleThreadExecutor(daemon("pgdurable-health-check"));
        server.setExecutor(handlers);
        server.createContext("/metrics", this::metrics);
        server.createContext("/health", this::health);
        server.createContext("/", e -> answer(e, 404, "text/plain; charset=utf-8", NOT_FOUND));
    }

    /**
     * Serves on {@code address} (port 0 picks a free one, see {@link #port()}) until closed.
     *
     * @param health the provider's health, e.g. {@code provider::health}
     * @throws IOException when the address cannot be bound (in use, not local)
     */
    public static MetricsEndpoint start(InetSocketAddress address, PrometheusMeterRegistry registry,
                                        Supplier<ProviderHealth> health) throws IOException {
        HttpServer server = HttpServer.create(Objects.requireNonNull(address, "address"), 16);
        MetricsEndpoint endpoint = new MetricsEndpoint(server, Objects.requireNonNull(registry, "registry"),
                Objects.requireNonNull(health, "health"));
        server.start();
        return endpoint;
    }

    /** The bound port. */
    public int port() {
        return server.getAddress().getPort();
    }

    private void metrics(HttpExchange e) throws IOException {
        if (!exactly("/metrics", e) || !readOnly(e)) {
            return;
        }
        answer(e, 200, PROMETHEUS_TEXT, registry.scrape());
    }

    private void health(HttpExchange e) throws IOException {
        if (!exactly("/health", e) || !readOnly(e)) {
            return;
        }
        Map<String, Object> body = new LinkedHashMap<>();
        ProviderHealth h;
        try {
            h = currentCheck().get(HEALTH_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException slow) {
            h = new ProviderHealth(false, "no answer within " + HEALTH_TIMEOUT.toMillis() + " ms", null);
        } catch (ExecutionException failed) {
            h = new ProviderHealth(false, String.valueOf(failed.getCause()), null);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            h = new ProviderHealth(false, "interrupted", null);
        }
        body.put("status", h.healthy() ? "up" : "down");
        body.put("database", h.databaseReachable() ? "up" : "down");
        if (h.databaseError() != null) {
            String error = h.databaseError();
            body.put("error", error.length() > MAX_ERROR_CHARS ? error.substring(0, MAX_ERROR_CHARS) + "..." : error);
        }
        body.put("listener", h.listening() == null ? (h.databaseReachable() ? "off" : "unknown")
                : h.listening() ? "up" : "down");
        answer(e, h.healthy() ? 200 : 503, "application/json", Json.write(body) + "\n");
    }

    /** The check in flight, or a new one: never more than one health query at a time. */
    private synchronized CompletableFuture<ProviderHealth> currentCheck() {
        if (check == null || check.isDone()) {
            check = CompletableFuture.supplyAsync(health, checks);
        }
        return check;
    }

    /** A context matches every path it prefixes: {@code /metricsfoo} is not {@code /metrics}. */
    private static boolean exactly(String path, HttpExchange e) throws IOException {
        if (e.getRequestURI().getPath().equals(path)) {
            return true;
        }
        answer(e, 404, "text/plain; charset=utf-8", NOT_FOUND);
        return false;
    }

    /** GET and HEAD only; anything else is answered 405 here. */
    private static boolean readOnly(HttpExchange e) throws IOException {
        String method = e.getRequestMethod();
        if (method.equals("GET") || method.equals("HEAD")) {
            return true;
        }
        e.getResponseHeaders().set("Allow", "GET, HEAD");
        answer(e, 405, "text/plain; charset=utf-8", "method not allowed: " + method + "\n");
        return false;
    }

    private static void answer(HttpExchange e, int status, String contentType, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        e.getResponseHeaders().set("Content-Type", contentType);
        e.getResponseHeaders().set("Cache-Control", "no-store");
        boolean head = e.getRequestMethod().equals("HEAD");
        e.sendResponseHeaders(status, head ? -1 : bytes.length);
        if (!head) {
            try (OutputStream out = e.getResponseBody()) {
                out.write(bytes);
            }
        }
        e.close();
    }

    /** Stops answering at once (requests in flight are cut) and frees the port. */
    @Override
    public void close() {
        server.stop(0);
        handlers.shutdownNow();
        checks.shutdownNow();
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
