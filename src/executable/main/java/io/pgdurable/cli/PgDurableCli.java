package io.pgdurable.cli;

import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.ProviderException;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code pgdurable} command shipped in the shaded jar: {@code migrate}, {@code activate}, {@code status},
 * {@code bench} and {@code serve}.
 *
 * <p>Exit codes: 0 success; 1 a {@link ProviderException} (database unreachable, migration failed, ...), printed as
 * {@code error: <message>} on stderr with {@code (retryable)} when repeating may help; 2 a usage error. Without
 * {@code --db} the commands run against one embedded PostgreSQL whose data is kept in a directory
 * ({@link DataDirectory}); {@code serve --ephemeral} and {@code bench} start a throw-away one.
 * URLs are always shown through {@link PostgresProviderConfig#redactUrl(String)}.
 */
@Command(name = "pgdurable", mixinStandardHelpOptions = true, version = PgDurableCli.VERSION,
        description = "Schema tool, benchmark and Durable Task sidecar for pgdurable, the PostgreSQL provider for "
                + "durable-workflow runtimes.",
        subcommands = {MigrateCommand.class, ActivateCommand.class, StatusCommand.class, BenchCommand.class,
                ServeCommand.class, ChaosCommand.class,
                CommandLine.HelpCommand.class},
        footer = {"", "Exit codes: 0 success, 1 provider/database error, 2 usage error."})
public final class PgDurableCli implements Callable<Integer> {
    static final String VERSION = "pgdurable 0.1.0";

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        String commands = String.join(", ", spec.subcommands().keySet().stream().filter(c -> !c.equals("help"))
                .toList());
        throw new ParameterException(spec.commandLine(), "a command is required, one of: " + commands);
    }

    public static void main(String[] args) {
        configureLogging(args);
        System.exit(commandLine().execute(args));
    }

    /** Runs the command line in-process with the given streams and returns its exit code (used by tests). */
    public static int run(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = commandLine();
        cl.setOut(out);
        cl.setErr(err);
        try {
            return cl.execute(args);
        } finally {
            out.flush();
            err.flush();
        }
    }

    private static CommandLine commandLine() {
        return new CommandLine(new PgDurableCli()).setParameterExceptionHandler(PgDurableCli::usageError);
    }

    /**
     * A usage error is one line on stderr naming what was wrong and where the help is, exit code 2: the whole usage
     * text after a typo buried the one line that mattered.
     */
    private static int usageError(ParameterException e, String[] args) {
        CommandLine cmd = e.getCommandLine();
        PrintWriter err = cmd.getErr();
        err.println("error: " + redact(e.getMessage()) + " (see '" + cmd.getCommandSpec().qualifiedName()
                + " --help')");
        err.flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
    }

    /**
     * Keeps the libraries' INFO chatter (pool start, Flyway, initdb of the embedded server) off the terminal unless
     * {@code --verbose} is given: the commands report what matters themselves. Errors are reported by the commands
     * too, so the pool's own stack traces are silenced. Explicit {@code -D} settings win.
     */
    private static void configureLogging(String[] args) {
        boolean verbose = Arrays.asList(args).contains("--verbose") || Arrays.asList(args).contains("-v");
        setDefault("org.slf4j.simpleLogger.defaultLogLevel", verbose ? "info" : "warn");
        setDefault("org.slf4j.simpleLogger.log.com.zaxxer.hikari", verbose ? "info" : "off");
        setDefault("org.slf4j.simpleLogger.log.org.flywaydb", verbose ? "info" : "error");
        // The Durable Task worker (bench sidecar scenario) logs each connect and disconnect through
        // java.util.logging; held in a field so the level sticks, and left alone when the application set it.
        java.util.logging.Logger dt = java.util.logging.Logger.getLogger("com.microsoft.durabletask");
        if (!verbose && dt.getLevel() == null) {
            dt.setLevel(java.util.logging.Level.WARNING);
        }
        durableTaskLog = dt;
        // pgjdbc warns through java.util.logging about a URL it cannot read; the command reports that itself.
        java.util.logging.Logger driver = java.util.logging.Logger.getLogger("org.postgresql");
        if (!verbose && driver.getLevel() == null) {
            driver.setLevel(java.util.logging.Level.SEVERE);
        }
        driverLog = driver;
    }

    private static java.util.logging.Logger durableTaskLog;
    private static java.util.logging.Logger driverLog;

    private static void setDefault(String property, String value) {
        if (System.getProperty(property) == null) {
            System.setProperty(property, value);
        }
    }

    /** Prints a provider failure the one way the CLI does it and returns exit code 1. */
    static int fail(PrintWriter err, ProviderException e) {
        err.println("error: " + redact(e.getMessage()) + (e.retryable() ? " (retryable)" : ""));
        err.flush();
        return 1;
    }

    private static final Pattern JDBC_URL = Pattern.compile("jdbc:[^\\s'\"]+?(?=[:;,.]?(?:[\\s'\"]|$))");
    private static final Pattern PASSWORD = Pattern.compile("(?i)(password=)(?!\\*\\*\\*)[^&;\\s'\"]*");

    /**
     * Any text that might carry a URL (a driver or pool message), with passwords replaced: every JDBC URL in it goes
     * through {@link PostgresProviderConfig#redactUrl(String)}, then any remaining {@code password=} value is
     * masked. The rest of the text is kept.
     */
    static String redact(String text) {
        if (text == null) {
            return "";
        }
        Matcher m = JDBC_URL.matcher(text);
        StringBuilder sb = new StringBuilder(text.length());
        while (m.find()) {
            m.appendReplacement(sb, Matcher.quoteReplacement(PostgresProviderConfig.redactUrl(m.group())));
        }
        m.appendTail(sb);
        return PASSWORD.matcher(sb).replaceAll("$1***");
    }
}
