package io.pgdurable.cli;

import io.pgdurable.postgres.SchemaMigrator;
import java.util.List;

/** Small formatting helpers shared by the commands. */
final class Text {
    private Text() {}

    static String version(SchemaMigrator.Status s) {
        if (!s.ledgerExists()) {
            return "none (not migrated)";
        }
        return s.currentVersion() == null ? "none" : s.currentVersion();
    }

    static String list(List<String> items) {
        return items.isEmpty() ? "none" : String.join(", ", items);
    }
}
