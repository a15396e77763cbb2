package io.pgdurable.cli;

import io.pgdurable.durabletask.SidecarConfig;
import io.pgdurable.durabletask.SidecarServer;
import io.pgdurable.durabletask.SidecarTls;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ProviderException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgdurable serve}: the Durable Task sidecar on the task hub's schema, long polling on, until SIGTERM/SIGINT
 * (or, in-process, until the running thread is interrupted). Stopping lets the workers return what they hold for a
 * few seconds and abandons the rest, so nothing is lost.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, version = PgDurableCli.VERSION,
        description = {"Run a Durable Task sidecar (the TaskHubSidecarService gRPC protocol of the Durable Task "
                + "SDKs: Java 1.5.0, Dapr's Java client, JavaScript) on PostgreSQL, with LISTEN/NOTIFY long polling.",
                "Point the SDK's worker and client at 127.0.0.1:p (Java: DurableTaskGrpcWorkerBuilder().port(p) and "
                        + "DurableTaskGrpcClientBuilder().port(p)). "
                        + "Without --db an embedded PostgreSQL keeps the task hub in --data-dir (default "
                        + "~/.pgdurable), so instances survive a restart; --ephemeral uses a throw-away one instead."})
final class ServeCommand implements Callable<Integer> {
    private static final long STOP_BUDGET_SECONDS = 20;

    @Spec
    CommandSpec spec;

    @Mixin
    DatabaseOptions options;

    @Mixin
    MetricsOptions metrics;

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "4001",
            description = "gRPC port (default: ${DEFAULT-VALUE}, the Durable Task SDK's default; 0 picks a free one).")
    int port;

    @Option(names = "--host", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
            description = "Address to bind (default: ${DEFAULT-VALUE}). Plaintext, the protocol has no "
                    + "authentication: beyond loopback use --tls-cert/--tls-key, and --tls-client-ca so that only "
                    + "clients with a certificate you issued get in.")
    String host;

    @Mixin
    TlsOptions tlsOptions;

    @Option(names = "--pool-size", paramLabel = "N", defaultValue = "12",
            description = "Database connections of the provider (default: ${DEFAULT-VALUE}); each connected worker "
                    + "parks up to two long-polled fetches.")
    int poolSize;

    @Option(names = "--direct-db", paramLabel = "URL",
            description = "With --db naming a transaction-pooling proxy (PgBouncer pool_mode = transaction): a URL "
                    + "that reaches the server directly, for migrations, the long-poll listener and status "
                    + "notifications; the pool through --db then prepares no statement on the server "
                    + "(docs/pgbouncer.md).")
    String directDb;

    @Option(names = "--ephemeral", description = "Without --db: a throw-away embedded PostgreSQL (no fsync, deleted "
            + "on exit) instead of the one keeping its data in --data-dir.")
    boolean ephemeral;

    @Override
    @SuppressWarnings("try") // the metrics endpoint is only closed, never read, inside its try
    public Integer call() {
        options.validate(spec);
        if (ephemeral && (options.db != null || options.dataDir != null)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--ephemeral excludes --db and "
                    + "--data-dir: it starts a throw-away embedded PostgreSQL");
        }
        if (directDb != null && options.db == null) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--direct-db needs --db: it is the "
                    + "direct route beside a transaction-pooling proxy named by --db");
        }
        SidecarTls tls = tlsOptions.load(spec);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        CountDownLatch stopRequested = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stopRequested.countDown();
            try {
                stopped.await(STOP_BUDGET_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "pgdurable-serve-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try (Database db = Database.openForServe(options, ephemeral, out, err)) {
            PostgresProviderConfig.Builder builder = PostgresProviderConfig.builder()
                    .jdbcUrl(db.url())
                    .schema(options.schema)
                    .poolSize(poolSize)
                    .longPolling(true)
                    .metrics(metrics.providerMetrics());
            if (directDb != null) {
                builder.transactionPooler(true).directUrl(directDb);
            }
            PostgresProviderConfig config = builder.build();
            String statusUrl = directDb != null ? directDb : db.url(); // LISTEN cannot go through the pooler
            try (PostgresProvider provider = PostgresProvider.create(config);
                 SidecarServer sidecar = SidecarServer.start(provider, SidecarConfig.defaults(options.schema)
                         .withHost(host).withPort(port).withStatusJdbcUrl(statusUrl).withTls(tls));
                 MetricsEndpoint endpoint = metrics.serve(provider, out, err)) {
                if (tls != null) {
                    out.println("Serving " + tls);
                }
                out.println("Durable Task sidecar listening on " + host + ":" + sidecar.port() + " (schema "
                        + options.schema + " on " + db.displayUrl() + ", long polling on); stop with Ctrl-C");
                out.flush();
                stopRequested.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // an in-process stop; the resources close above
            }
            out.println("Durable Task sidecar stopped");
            out.flush();
            return 0;
        } catch (UncheckedIOException e) {
            err.println("error: " + e.getMessage() + ": " + e.getCause().getMessage());
            err.flush();
            return 1;
        } catch (ProviderException e) {
            return PgDurableCli.fail(err, e);
        } finally {
            stopped.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running: it has what it waits for
            }
        }
    }
}
