package io.pgdurable.cli;

import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.ProviderException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code pgdurable migrate}: applies the pending migrations to a schema, under the schema's migration lock. */
@Command(name = "migrate", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = "Apply pending schema migrations (creates the schema if needed) and print the resulting "
                + "version.")
final class MigrateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    DatabaseOptions options;

    @Override
    public Integer call() {
        options.validate(spec);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try (Database db = Database.open(options, "migrate", out, err)) {
            SchemaMigrator migrator = db.migrator(options.schema);
            out.println("migrating schema " + options.schema + " on " + db.displayUrl());
            out.flush();
            SchemaMigrator.Status before = migrator.status();
            migrator.applyAll();
            SchemaMigrator.Status after = migrator.status();

            List<String> applied = new ArrayList<>(before.pending());
            applied.removeAll(after.pending());
            if (applied.isEmpty()) {
                out.println("nothing to apply");
            } else {
                out.println("applied " + applied.size() + " migration(s): " + String.join(", ", applied));
            }
            out.println("schema " + options.schema + " is at version " + Text.version(after)
                    + (after.upToDate() ? " (up to date)" : ""));
            if (!after.unknownApplied().isEmpty()) {
                err.println("warning: the schema is ahead of this tool (" + Version.tool() + "): it has "
                        + "migration(s) it does not know: " + String.join(", ", after.unknownApplied()));
            }
            if (!after.failed().isEmpty()) {
                err.println("warning: the schema records failed migration(s): " + String.join(", ", after.failed()));
            }
            return 0;
        } catch (ProviderException e) {
            return PgDurableCli.fail(err, e);
        }
    }
}
