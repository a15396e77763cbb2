package io.pgdurable.cli;

import io.pgdurable.bench.Bench;
import io.pgdurable.bench.BenchResult;
import io.pgdurable.bench.EmbeddedServer;
import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.spi.ProviderException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code pgdurable bench}: short polling and long polling side by side on one database (an embedded PostgreSQL with
 * pg_stat_statements by default), with progress, a JSON result and a Markdown report with PNG charts. Exit code 0
 * when every scenario ran (whether or not its targets were met), 1 when one failed or the database is unusable.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = {"Benchmark short polling against long polling on one database: idle statements, wake "
                + "latency, timers, lease recovery, wakes per item, throughput, fan-out, notification cost, "
                + "orchestrations through the Durable Task sidecar.",
                "Without --db it starts an embedded, throw-away PostgreSQL with pg_stat_statements (not the one "
                        + "keeping the other commands' data: a fresh server each run keeps the figures comparable). "
                        + "The default run takes about twenty minutes; --quick a few seconds per scenario (checks the "
                        + "harness, not the speed)."})
final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--db", paramLabel = "JDBC_URL", description = "jdbc:postgresql: URL of a database to run on "
            + "(use one nobody else uses meanwhile: statements are counted for the whole database). The benchmark "
            + "creates and drops schemas of its own there.")
    String db;

    @Option(names = "--out", paramLabel = "DIR", defaultValue = "pgdurable-bench",
            description = "Folder of the results: the JSON, the Markdown report and its charts (default: "
                    + "${DEFAULT-VALUE}, created when missing).")
    Path outDir;

    @Option(names = "--json", paramLabel = "FILE", defaultValue = "bench.json",
            description = "The JSON result, inside --out unless the path is absolute (default: ${DEFAULT-VALUE}).")
    Path json;

    @Option(names = "--report", paramLabel = "FILE.md", defaultValue = "report.md",
            description = "The Markdown report, inside --out unless the path is absolute; its PNG charts go to "
                    + "<name>-charts/ beside it (default: ${DEFAULT-VALUE}).")
    Path report;

    @Option(names = "--quick", description = "A few seconds per scenario (for tests and smoke runs).")
    boolean quick;

    @Option(names = "--scenarios", split = ",", paramLabel = "NAME",
            description = "Only these scenarios (comma-separated): idle, wake, timer, lease, wakes-per-item, "
                    + "burst-quiet, throughput, drain, fanout, notify-overhead, notify-lock, sql-wake, sidecar, "
                    + "metrics-overhead, peers, listeners. Default: all. peers runs graphile-worker beside pgdurable "
                    + "and needs Node.js or the npm registry.")
    List<String> scenarios;

    @Option(names = {"-v", "--verbose"}, description = "Show the libraries' log output on stderr.")
    boolean verbose;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<String> selected;
        if (Files.exists(outDir) && !Files.isDirectory(outDir)) {
            // checked before a run of twenty minutes, not after it
            throw new ParameterException(spec.commandLine(), "--out must name a folder, and " + outDir
                    + " is a file");
        }
        DatabaseOptions.checkUrl(spec, "--db", db);
        try {
            selected = Bench.select(scenarios);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), PgDurableCli.redact(e.getMessage()));
        }
        try { // checked before a run of twenty minutes, not after it
            BenchResult.checkChartsCanBeDrawn();
        } catch (IllegalStateException e) {
            err.println("error: " + e.getMessage());
            err.flush();
            return 1;
        }
        String command = PgDurableCli.redact("pgdurable " + String.join(" ",
                spec.commandLine().getParseResult().originalArgs()));
        try {
            if (db != null) {
                DatabaseOptions options = new DatabaseOptions();
                options.db = db;
                String display;
                try (Database database = Database.open(options, "bench", out, err)) {
                    database.pool(1).getConnection().close(); // fail fast, with the CLI's message, when unreachable
                    display = database.displayUrl();
                }
                return run(db, display, false, selected, command, out, err);
            }
            out.println("no --db given: starting an embedded throw-away PostgreSQL with pg_stat_statements (a fresh "
                    + "server per run; the data directory of the other commands is not used) ...");
            out.flush();
            EmbeddedServer server;
            try {
                server = EmbeddedServer.start(true);
            } catch (IOException | RuntimeException e) {
                err.println("warning: could not start the embedded PostgreSQL with pg_stat_statements ("
                        + e.getMessage() + "); starting it without (statements are then counted as transactions)");
                err.flush();
                try {
                    server = EmbeddedServer.start(false);
                } catch (IOException | RuntimeException again) {
                    throw new ProviderException("embedded", "could not start an embedded PostgreSQL: "
                            + again.getMessage() + "; pass --db JDBC_URL to use a running server", false, null, again);
                }
            }
            try (EmbeddedServer s = server) {
                return run(s.url(), JdbcUrls.redact(s.url()), true, selected, command, out, err);
            }
        } catch (ProviderException e) {
            return PgDurableCli.fail(err, e);
        } catch (java.sql.SQLException e) {
            err.println("error: " + PgDurableCli.redact(e.getMessage()));
            err.flush();
            return 1;
        }
    }

    private int run(String url, String display, boolean embedded, List<String> selected, String command,
                    PrintWriter out, PrintWriter err) throws java.sql.SQLException {
        BenchResult result;
        try {
            result = new Bench(url, new Bench.Options(quick, selected, display, embedded, command), out).run();
        } catch (java.sql.SQLException | ProviderException e) {
            throw e;
        } catch (Exception e) {
            err.println("error: the benchmark stopped: " + PgDurableCli.redact(String.valueOf(e.getMessage())));
            err.flush();
            return 1;
        }
        try {
            for (Path p : result.write(outDir.resolve(json), outDir.resolve(report))) {
                out.println("wrote " + p);
            }
        } catch (IOException e) {
            err.println("error: could not write the results: " + e.getMessage());
            err.flush();
            return 1;
        }
        out.flush();
        if (!result.failures().isEmpty()) {
            err.println("error: scenario(s) failed: " + result.failures().keySet() + " (see the report)");
            err.flush();
            return 1;
        }
        return 0;
    }
}
