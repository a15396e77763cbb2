package io.pgdurable.cli;

import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.spi.ProviderException;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * URLs are always shown through {@link JdbcUrls#redact(String)}.
 */
@Command(name = "pgdurable", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = "Schema tool, benchmark and Durable Task sidecar for pgdurable, the PostgreSQL provider for "
                + "durable-workflow runtimes.",
        subcommands = {MigrateCommand.class, ActivateCommand.class, StatusCommand.class, BenchCommand.class,
                ServeCommand.class, ChaosCommand.class,
                CommandLine.HelpCommand.class},
        footer = {"", "Exit codes: 0 success, 1 provider/database error, 2 usage error."})
public final class PgDurableCli implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "a command is required, one of: " + commands(spec));
    }

    private static String commands(CommandSpec spec) {
        return String.join(", ", spec.subcommands().keySet().stream().filter(c -> !c.equals("help")).toList());
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
     * text after a typo buried the one line that mattered. A mistyped command or option is followed by a line naming
     * the closest ones.
     */
    private static int usageError(ParameterException e, String[] args) {
        CommandLine cmd = e.getCommandLine();
        PrintWriter err = cmd.getErr();
        String message = redact(e.getMessage());
        if (e instanceof CommandLine.UnmatchedArgumentException u && !u.isUnknownOption()
                && !u.getUnmatched().isEmpty() && cmd.getCommandSpec().parent() == null
                && cmd.getParseResult() != null && !cmd.getParseResult().hasSubcommand()) {
            // picocli says "Unmatched argument at index 0", which does not say that a command was expected
            String typed = u.getUnmatched().get(0);
            err.println("error: '" + typed + "' is not a command; the commands are " + commands(cmd.getCommandSpec())
                    + " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')");
            List<String> close = closestCommands(typed, cmd.getCommandSpec());
            if (!close.isEmpty()) {
                err.println("Did you mean: " + String.join(" or ", close.stream()
                        .map(c -> cmd.getCommandSpec().qualifiedName() + " " + c).toList()) + "?");
            }
        } else {
            err.println("error: " + message + " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')");
            // a mistyped option: picocli names the options that start like it
            CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
        }
        err.flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
    }

    /**
     * The commands a mistyped one most likely meant: those it begins, and those within two edits (a transposed pair
     * of letters counts as one), nearest first. picocli's own suggestions rank by letter-pair similarity, which
     * offered {@code chaos} for {@code bnech} and three unrelated commands for a word like none of them.
     */
    static List<String> closestCommands(String typed, CommandSpec spec) {
        String t = typed.toLowerCase(java.util.Locale.ROOT);
        Map<String, Integer> distance = new LinkedHashMap<>();
        for (String c : spec.subcommands().keySet()) {
            int d = editDistance(t, c);
            if (!c.equals("help") && (d <= Math.min(2, Math.max(1, t.length() / 3)) || t.length() >= 2
                    && c.startsWith(t))) {
                distance.put(c, d);
            }
        }
        return distance.entrySet().stream().sorted(Map.Entry.comparingByValue()).map(Map.Entry::getKey).toList();
    }

    /** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
    private static int editDistance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
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
     * through {@link JdbcUrls#redact(String)}, then any remaining {@code password=} value is
     * masked. The rest of the text is kept.
     */
    static String redact(String text) {
        if (text == null) {
            return "";
        }
        Matcher m = JDBC_URL.matcher(text);
        StringBuilder sb = new StringBuilder(text.length());
        while (m.find()) {
            m.appendReplacement(sb, Matcher.quoteReplacement(JdbcUrls.redact(m.group())));
        }
        m.appendTail(sb);
        return PASSWORD.matcher(sb).replaceAll("$1***");
    }
}
