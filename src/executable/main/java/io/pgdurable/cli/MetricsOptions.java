package io.pgdurable.cli;

import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgdurable.metrics.PgDurableMetrics;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.ProviderMetrics;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code serve}'s metrics options: with {@code --metrics-port} the provider reports to a Prometheus registry, served
 * with a health check by a {@link MetricsEndpoint} for as long as the sidecar runs.
 */
final class MetricsOptions {
    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    private Integer port;
    private String host;
    private InetAddress address;
    private PrometheusMeterRegistry registry;

    /** Checked as it is parsed, so a bad value is a usage error before anything starts. */
    @Option(names = "--metrics-port", paramLabel = "PORT",
            description = "Serve Prometheus metrics on http://ADDRESS:PORT/metrics and a health check on /health "
                    + "(200 or 503; 0 picks a free port). Default: no metrics endpoint.")
    void port(int value) {
        if (value < 0 || value > 65535) {
            throw new ParameterException(spec.commandLine(), "--metrics-port must be in 0..65535, was " + value);
        }
        port = value;
    }

    @Option(names = "--metrics-host", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
            description = "Address of the metrics endpoint (default: ${DEFAULT-VALUE}). It has no authentication: "
                    + "bind other addresses only on a network you trust.")
    void host(String value) {
        try {
            address = InetAddress.getByName(value);
        } catch (UnknownHostException e) {
            throw new ParameterException(spec.commandLine(), "--metrics-host '" + value + "' does not resolve to an "
                    + "address");
        }
        host = value;
    }

    /** Where the provider reports: a Prometheus registry with the JVM's own meters, or nothing without a port. */
    ProviderMetrics providerMetrics() {
        if (port == null) {
            return ProviderMetrics.NONE;
        }
        if (registry == null) {
            registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            new JvmMemoryMetrics().bindTo(registry);
            new JvmThreadMetrics().bindTo(registry);
            new ProcessorMetrics().bindTo(registry);
            new UptimeMetrics().bindTo(registry);
        }
        return new PgDurableMetrics(registry);
    }

    /**
     * Starts the endpoint for {@code provider} and says where it is (warning when the address is not loopback);
     * null without {@code --metrics-port}.
     *
     * @throws ServeCommand.CannotListen when the address cannot be bound (the port in use, an address not local)
     */
    MetricsEndpoint serve(PostgresProvider provider, PrintWriter out, PrintWriter err) {
        if (port == null) {
            return null;
        }
        providerMetrics(); // the registry, should the provider have been built without it
        MetricsEndpoint endpoint;
        try {
            endpoint = MetricsEndpoint.start(new InetSocketAddress(address, port), registry, provider::health);
        } catch (IOException e) {
            throw ServeCommand.CannotListen.of("the metrics port", host, port, "--metrics-port", "--metrics-host", e);
        }
        if (!address.isLoopbackAddress()) {
            err.println("warning: the metrics endpoint on " + host + " is not on a loopback address and has no "
                    + "authentication: whoever reaches it reads /metrics and /health");
            err.flush();
        }
        out.println("Metrics on http://" + hostForUrl() + ":" + endpoint.port() + "/metrics, health on /health");
        out.flush();
        return endpoint;
    }

    private String hostForUrl() {
        return host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
    }
}
