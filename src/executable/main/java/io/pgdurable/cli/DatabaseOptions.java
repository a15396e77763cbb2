package io.pgdurable.cli;

import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.postgres.PostgresProviderConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The options every database command shares: where the database is (a URL, or the embedded server's data directory)
 * and which schema (task hub) to use.
 */
final class DatabaseOptions {
    @Option(names = "--db", paramLabel = "JDBC_URL",
            description = "jdbc:postgresql: URL of the database. Without it the commands use one embedded "
                    + "PostgreSQL whose data is kept in --data-dir (started for the command, or shared with the "
                    + "pgdurable process running it).")
    String db;

    @Option(names = "--data-dir", paramLabel = "DIR",
            description = "Where the embedded PostgreSQL keeps its data when no --db is given (default: "
                    + "~/.pgdurable; PostgreSQL's own files in DIR/pgdata).")
    Path dataDir;

    @Option(names = "--schema", paramLabel = "NAME", defaultValue = PostgresProviderConfig.DEFAULT_SCHEMA,
            description = "Schema of the task hub (default: ${DEFAULT-VALUE}).")
    String schema;

    @Option(names = {"-v", "--verbose"}, description = "Show the libraries' log output (pool, Flyway, embedded "
            + "server) on stderr.")
    boolean verbose;

    /**
     * Rejects a malformed URL or schema name as a usage error (exit code 2) before anything is started. The
     * message never shows a password.
     */
    void validate(CommandSpec spec) {
        if (db != null && dataDir != null) {
            throw new ParameterException(spec.commandLine(), "--db and --data-dir exclude each other: --data-dir "
                    + "is where the embedded PostgreSQL keeps its data when there is no --db");
        }
        if (dataDir != null && Files.exists(dataDir) && !Files.isDirectory(dataDir)) {
            throw new ParameterException(spec.commandLine(), "--data-dir must name a directory, and " + dataDir
                    + " is a file");
        }
        checkUrl(spec, "--db", db);
        try {
            // the URL is checked above; what is left to fail here is the schema name
            PostgresProviderConfig.builder()
                    .jdbcUrl(db != null ? db : "jdbc:postgresql://localhost/postgres")
                    .schema(schema)
                    .build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), PgDurableCli.redact(e.getMessage()));
        }
    }

    /**
     * Rejects a URL option the PostgreSQL driver cannot use as a usage error naming the option the user typed (the
     * library's own message names its setting, {@code jdbcUrl}). Null passes.
     */
    static void checkUrl(CommandSpec spec, String option, String url) {
        try {
            JdbcUrls.check(option, url);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), PgDurableCli.redact(e.getMessage()));
        }
    }
}
