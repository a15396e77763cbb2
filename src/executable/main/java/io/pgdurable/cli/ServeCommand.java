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
@Command(name = "serve", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = {"Run a Durable Task sidecar (the TaskHubSidecarService gRPC protocol of the Durable Task "
                + "SDKs: Java 1.5.0, Dapr's Java client, JavaScript) on PostgreSQL, with LISTEN/NOTIFY long polling.",
                "Point the SDK's worker and client at 127.0.0.1:p (Java: DurableTaskGrpcWorkerBuilder().port(p) and "
                        + "DurableTaskGrpcClientBuilder().port(p)). "
                        + "Without --db an embedded PostgreSQL keeps the task hub in --data-dir (default "
                        + "~/.pgdurable), so instances survive a restart; --ephemeral uses a throw-away one instead."})
final class ServeCommand implements Callable<Integer> {
    private static final long STOP_BUDGET_SECONDS = 20;
    /** What the provider's refusal of a transaction pooler it was not told about says to set. */
    static final String UNDECLARED_POOLER = "set transactionPooler(true) and directUrl";

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
        DatabaseOptions.checkUrl(spec, "--direct-db", directDb);
        if (directDb != null && directDb.equals(options.db)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--direct-db is the same URL as "
                    + "--db, which goes through the transaction pooler; point it at PostgreSQL itself");
        }
        if (port < 0 || port > 65535) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--port must be in 0..65535, was "
                    + port);
        }
        // long polling parks fetches on the pool and needs a second connection for their retries and the scans
        if (poolSize < 2 || poolSize > 1000) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--pool-size must be in 2..1000 "
                    + "(long polling needs two connections at least), was " + poolSize);
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
            PostgresProviderConfig config;
            try {
                config = builder.build();
            } catch (IllegalArgumentException e) {
                // the options are checked above; this names the library's setting, but is still the user's input
                throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                        PgDurableCli.redact(e.getMessage()));
            }
            String statusUrl = directDb != null ? directDb : db.url(); // LISTEN cannot go through the pooler
            try (PostgresProvider provider = PostgresProvider.create(config);
                 SidecarServer sidecar = startSidecar(provider, SidecarConfig.defaults(options.schema)
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
        } catch (CannotListen e) {
            err.println("error: " + e.getMessage());
            err.flush();
            return 1;
        } catch (UncheckedIOException e) {
            err.println("error: " + e.getMessage() + ": " + e.getCause().getMessage());
            err.flush();
            return 1;
        } catch (ProviderException e) {
            if (directDb == null && e.getMessage().contains(UNDECLARED_POOLER)) {
                // the library names its settings; serve declares the pooler with --direct-db
                err.println("error: " + PgDurableCli.redact(e.getMessage()) + ". With serve: --db names the "
                        + "pooler, and --direct-db URL, a URL that reaches PostgreSQL without it, declares it");
                err.flush();
                return 1;
            }
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

    private SidecarServer startSidecar(PostgresProvider provider, SidecarConfig config) {
        try {
            return SidecarServer.start(provider, config);
        } catch (UncheckedIOException e) {
            throw CannotListen.of("the gRPC port", host, port, "--port", "--host", e);
        }
    }

    /** A port serve cannot listen on, said the way the user can act on: which address, and the option to move. */
    static final class CannotListen extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private CannotListen(String message, Throwable cause) {
            super(message, cause);
        }

        /**
         * @param what        what was to listen there, e.g. "the gRPC port"
         * @param portOption  the option that sets the port
         * @param hostOption  the option that sets the address
         */
        static CannotListen of(String what, String host, int port, String portOption, String hostOption,
                               Throwable failure) {
            String address = (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
            if (inUse(failure)) {
                return new CannotListen(what + " " + address + " is in use (another process listens there): stop "
                        + "that process or choose another port with " + portOption + " PORT (" + portOption
                        + " 0 picks a free one)", failure);
            }
            return new CannotListen("cannot listen on " + address + " for " + what + ": " + reason(failure)
                    + " (is " + host + " an address of this machine? choose another with " + hostOption + ")",
                    failure);
        }

        /**
         * Whether the bind failed because the port is taken. The JDK reports it as a {@link java.net.BindException};
         * gRPC's native transport as an IOException carrying the system's own text (EADDRINUSE).
         */
        private static boolean inUse(Throwable failure) {
            for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
                String m = t.getMessage();
                if (m != null && m.contains("Address already in use")) {
                    return true;
                }
            }
            return false;
        }

        /** The innermost cause's text: the system's reason rather than the wrappers' "Failed to bind". */
        private static String reason(Throwable failure) {
            Throwable innermost = failure;
            while (innermost.getCause() != null && innermost.getCause() != innermost) {
                innermost = innermost.getCause();
            }
            return innermost.getMessage() != null ? innermost.getMessage() : innermost.getClass().getSimpleName();
        }
    }
}
