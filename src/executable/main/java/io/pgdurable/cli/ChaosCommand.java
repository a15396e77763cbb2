package io.pgdurable.cli;

import io.pgdurable.chaos.ChaosReport;
import io.pgdurable.chaos.ChaosRun;
import io.pgdurable.chaos.ChaosSettings;
import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ProviderException;
import java.io.IOException;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code pgdurable chaos}: producers and long-polling consumers on one schema while their backends are killed and
 * the listener's link is cut, then a ledger check. Exit code 0 when nothing was lost and every second delivery is
 * explained by a failed ack, 1 otherwise (or when the database is unusable), 2 for a usage error.
 */
@Command(name = "chaos", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = {"Run producers and long-polling consumers on one schema while, at random intervals, the "
                + "listener's backend is terminated, the pool's backends are terminated, and a loopback relay in "
                + "front of the listener stops forwarding for a few seconds (a half-open link). Then check a ledger "
                + "of every item: none lost, none delivered twice unless its ack failed.",
                "Only the run's own backends are touched (found by the relays' ports). Use a schema no worker "
                        + "uses: the run refuses one with work queued."})
final class ChaosCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--db", required = true, paramLabel = "JDBC_URL",
            description = "jdbc:postgresql: URL of the database (one host; the role must be allowed to terminate "
                    + "its own backends, as every role is).")
    String db;

    @Option(names = "--schema", paramLabel = "NAME", defaultValue = ChaosSettings.DEFAULT_SCHEMA,
            description = "Schema of the run's task hub, created when missing (default: ${DEFAULT-VALUE}).")
    String schema;

    @Option(names = "--minutes", paramLabel = "N", description = "How long the load runs, in minutes (fractions "
            + "allowed: 0.5).")
    Double minutes;

    @Option(names = "--seconds", paramLabel = "N", description = "How long the load runs, in seconds (instead of "
            + "--minutes; default 60).")
    Double seconds;

    @Option(names = "--rate", paramLabel = "ITEMS_PER_SECOND", defaultValue = "200",
            description = "Items enqueued per second by all producers together (default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = "--producers", paramLabel = "N", defaultValue = "2",
            description = "Producer threads (default: ${DEFAULT-VALUE}).")
    int producers;

    @Option(names = "--consumers", paramLabel = "N", defaultValue = "4",
            description = "Long-polling consumer threads (default: ${DEFAULT-VALUE}).")
    int consumers;

    @Option(names = "--listener-driver", paramLabel = "DRIVER", defaultValue = "pgjdbc-ng",
            description = "The listener connection's driver: pgjdbc-ng or pgjdbc (default: ${DEFAULT-VALUE}).")
    String listenerDriver;

    @Option(names = {"-v", "--verbose"}, description = "Show the libraries' log output on stderr.")
    boolean verbose;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        ChaosSettings settings = settings();
        out.println("chaos: " + duration(settings.duration()) + " on " + JdbcUrls.redact(db)
                + ", schema " + settings.schema() + " ...");
        out.flush();
        ChaosReport report;
        try {
            report = new ChaosRun(settings, line -> {
                out.println(line);
                out.flush();
            }).run();
        } catch (ProviderException e) {
            return PgDurableCli.fail(err, e);
        } catch (IllegalStateException | IOException | SQLException e) {
            err.println("error: " + PgDurableCli.redact(e.getMessage()));
            err.flush();
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            err.flush();
            return 1;
        }
        report.summary().forEach(out::println);
        out.flush();
        return report.passed() ? 0 : 1;
    }

    private ChaosSettings settings() {
        DatabaseOptions.checkUrl(spec, "--db", db);
        if (minutes != null && seconds != null) {
            throw new ParameterException(spec.commandLine(), "--minutes and --seconds exclude each other");
        }
        double s = minutes != null ? minutes * 60 : seconds != null ? seconds : 60;
        if (!Double.isFinite(s)) {
            throw new ParameterException(spec.commandLine(), "the duration must be a number");
        }
        PostgresProviderConfig.ListenerDriver driver = switch (listenerDriver.toLowerCase(Locale.ROOT)) {
            case "pgjdbc-ng", "pgjdbc_ng" -> PostgresProviderConfig.ListenerDriver.PGJDBC_NG;
            case "pgjdbc" -> PostgresProviderConfig.ListenerDriver.PGJDBC;
            default -> throw new ParameterException(spec.commandLine(), "--listener-driver must be pgjdbc-ng or "
                    + "pgjdbc, was '" + listenerDriver + "'");
        };
        try {
            return new ChaosSettings(db, schema, Duration.ofMillis(Math.round(s * 1000)), producers, consumers,
                    rate, driver);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), PgDurableCli.redact(e.getMessage()));
        }
    }

    private static String duration(Duration d) {
        return d.toMillis() % 60_000 == 0 ? d.toMinutes() + " min" : String.format(Locale.ROOT, "%.1f s",
                d.toMillis() / 1000.0);
    }
}
