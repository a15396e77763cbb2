package io.pgdurable.cli;

import io.pgdurable.postgres.SchemaMigrator;
import io.pgdurable.spi.ProviderException;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgdurable activate}: activates long polling on a schema. Schema-wide: every provider on the schema then
 * announces its writes (wake-up notifications) to the others, and the schema's notify triggers are enabled so
 * every other writer's commit notifies too.
 */
@Command(name = "activate", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = "Enable LISTEN/NOTIFY long polling on a migrated schema: providers announce their writes and "
                + "the notify triggers wake parked fetches on every other writer's commit (schema-wide; --off "
                + "disables both).")
final class ActivateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    DatabaseOptions options;

    @Option(names = "--off", description = "Deactivate instead: the notify triggers are disabled, long-polling "
            + "providers then refuse to start under VERIFY_ONLY, and providers that do not long-poll stop announcing "
            + "their writes within 30 s.")
    boolean off;

    @Override
    public Integer call() {
        options.validate(spec);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try (Database db = Database.open(options, "activate", out, err)) {
            SchemaMigrator migrator = db.migrator(options.schema);
            SchemaMigrator.Status status = migrator.status();
            if (!status.upToDate()) {
                err.println("error: schema " + options.schema + " is not at this tool's version ("
                        + Text.version(status) + "); run `migrate` first");
                err.flush();
                return 1;
            }
            if (off) {
                migrator.deactivate();
            } else {
                migrator.activate();
            }
            out.println("schema " + options.schema + ": long polling " + (migrator.activated() ? "activated"
                    : "not activated") + " (providers " + (off ? "stop announcing" : "announce") + " their writes); "
                    + "notify triggers " + migrator.notifyTriggers().describe());
            out.flush();
            return 0;
        } catch (ProviderException e) {
            return PgDurableCli.fail(err, e);
        }
    }
}
