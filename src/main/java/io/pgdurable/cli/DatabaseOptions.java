package io.pgdurable.cli;

import io.pgdurable.postgres.PostgresProviderConfig;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The options every database command shares: where the database is and which schema (task hub) to use. */
final class DatabaseOptions {
    @Option(names = "--db", paramLabel = "JDBC_URL",
            description = "jdbc:postgresql: URL of the database. Without it an embedded, throw-away PostgreSQL is "
                    + "started for the command and stopped afterwards.")
    String db;

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
        try {
            PostgresProviderConfig.builder()
                    .jdbcUrl(db != null ? db : "jdbc:postgresql://localhost/postgres")
                    .schema(schema)
                    .build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), PgDurableCli.redact(e.getMessage()));
        }
    }
}
