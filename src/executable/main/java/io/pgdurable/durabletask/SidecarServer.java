package io.pgdurable.durabletask;

import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.pgdurable.spi.OrchestrationProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Durable Task sidecar: a gRPC server speaking TaskHubSidecarService on top of an {@link OrchestrationProvider}.
 * Durable Task for Java workers and clients ({@code DurableTaskGrpcWorkerBuilder().port(p)},
 * {@code DurableTaskGrpcClientBuilder().port(p)}) connect to it as they would to any sidecar.
 *
 * <p>The provider stays the caller's: closing the server does not close it. {@link #close()} refuses new calls
 * and hands out no more work, but for up to {@link SidecarConfig#shutdownGrace()} keeps taking back (and committing)
 * the results of items the workers hold; it moves on as soon as nothing is outstanding, abandons what is still out
 * (so another sidecar picks it up at once), ends the worker streams and stops.
 */
public final class SidecarServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SidecarServer.class);

    private final Server server;
    private final WorkDispatcher dispatcher;
    private final InstanceWatch watch;
    private final StopGate gate;
    private final AtomicBoolean closed = new AtomicBoolean();

    private SidecarServer(Server server, WorkDispatcher dispatcher, InstanceWatch watch, StopGate gate) {
        this.server = server;
        this.dispatcher = dispatcher;
        this.watch = watch;
        this.gate = gate;
    }

    /** Binds and starts serving; throws {@link UncheckedIOException} when the address cannot be bound. */
    public static SidecarServer start(OrchestrationProvider provider, SidecarConfig config) {
        Clock clock = Clock.systemUTC();
        InstanceWatch watch = config.statusJdbcUrl() == null ? InstanceWatch.local()
                : InstanceWatch.shared(config.statusJdbcUrl(), config.schema());
        WorkDispatcher dispatcher = new WorkDispatcher(provider, watch, config, clock);
        InstanceClient client = new InstanceClient(provider, watch, config, clock);
        StopGate gate = new StopGate();
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress(config.host(), config.port()),
                        config.tls() == null ? InsecureServerCredentials.create() : config.tls().serverCredentials())
                .addService(new TaskHubService(dispatcher, client, new EntityClient(provider, clock),
                        config.limits()))
                // Find workers whose connection died silently; their items are abandoned when the stream ends.
                .keepAliveTime(30, TimeUnit.SECONDS)
                .keepAliveTimeout(10, TimeUnit.SECONDS)
                .permitKeepAliveTime(10, TimeUnit.SECONDS)
                .maxInboundMessageSize(config.limits().maxMessageBytes())
                .intercept(new WorkerAgent())
                .intercept(gate)
                .build();
        try {
            server.start();
        } catch (IOException e) {
            dispatcher.close();
            watch.close();
            throw new UncheckedIOException("could not listen on " + config.host() + ":" + config.port(), e);
        }
        LOG.info("Durable Task sidecar listening on {}:{} (task hub schema {}, {})", config.host(), server.getPort(),
                config.schema(), config.tls() == null ? "plaintext" : config.tls());
        plaintextExposure(config).ifPresent(LOG::warn);
        if (config.tls() != null) {
            config.tls().validityProblem(clock.instant()).ifPresent(LOG::warn);
        }
        return new SidecarServer(server, dispatcher, watch, gate);
    }

    /**
     * The warning for a plaintext sidecar bound beyond loopback: whoever reaches the port can start, read and end
     * any orchestration, and the traffic (inputs, outputs) can be read on the way.
     */
    static Optional<String> plaintextExposure(SidecarConfig config) {
        if (config.tls() != null) {
            return Optional.empty();
        }
        try {
            if (InetAddress.getByName(config.host()).isLoopbackAddress()) {
                return Optional.empty();
            }
        } catch (UnknownHostException e) {
            return Optional.empty(); // start() has bound it, so it resolves; no warning rather than a wrong one
        }
        return Optional.of("the Durable Task sidecar on " + config.host() + " is reachable beyond this machine "
                + "without TLS: anyone who reaches it can start, read and end orchestrations; give it a certificate "
                + "(serve --tls-cert/--tls-key, --tls-client-ca to require client certificates) or bind 127.0.0.1");
    }

    /** The bound port (useful with port 0). */
    public int port() {
        return server.getPort();
    }

    /** Worker streams open right now. */
    public int openWorkerStreams() {
        return dispatcher.openStreams();
    }

    /** Whether a stop began within {@code timeout} (from then on only results get in). */
    boolean awaitStopping(java.time.Duration timeout) throws InterruptedException {
        return gate.awaitStopping(timeout);
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        long began = System.nanoTime();
        gate.close(); // new calls refused, except results and abandons of work handed out
        dispatcher.close(); // waits for those results (up to the grace period), abandons the rest
        server.shutdown(); // only now: a result sent during the grace period must still get in
        watch.close(); // wakes waiting client calls so they end
        try {
            if (!server.awaitTermination(2, TimeUnit.SECONDS)) {
                server.shutdownNow();
                server.awaitTermination(1, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
        LOG.info("Durable Task sidecar stopped ({} ms)", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
    }
}
