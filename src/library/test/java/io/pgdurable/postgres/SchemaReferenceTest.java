package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/schema.md is the reference of the schema: the tables, indexes, functions and triggers it names (in the first
 * column of the tables under its "Tables", "Indexes", "Functions" and "Triggers" headings) are exactly those of a
 * freshly migrated schema, apart from Flyway's ledger. A function is named either alone, when the schema has one
 * function of that name, or with its argument types, {@code provider_write(bigint, text, boolean)}, when it has
 * several.
 */
class SchemaReferenceTest {
    private static final Path PAGE = Path.of("docs/schema.md");
    /** A row of a Markdown table whose first cell is one name in backticks. */
    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\|");
    private static final List<String> KINDS = List.of("Tables", "Indexes", "Functions", "Triggers");

    @Test
    void the_page_names_every_table_index_function_and_trigger_of_a_migrated_schema_and_nothing_else()
            throws IOException, SQLException {
        Map<String, Set<String>> documented = documented();
        String schema = TestDatabase.newSchemaName("schema_doc");
        Map<String, Set<String>> migrated = new TreeMap<>();
        Map<String, Integer> overloads = new TreeMap<>();
        try {
            PostgresProvider.create(TestDatabase.config(schema).build()).close();
            try (Connection c = TestDatabase.connect()) {
                migrated.put("Tables", names(c, schema, "SELECT c.relname FROM pg_class c JOIN pg_namespace n"
                        + " ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind = 'r' AND c.relname <> ?"));
                migrated.put("Indexes", names(c, schema, "SELECT indexname FROM pg_indexes WHERE schemaname = ?"
                        + " AND tablename <> ?"));
                migrated.put("Triggers", names(c, schema, "SELECT t.tgname FROM pg_trigger t JOIN pg_class c"
                        + " ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
                        + " WHERE n.nspname = ? AND NOT t.tgisinternal AND c.relname <> ?"));
                Set<String> functions = names(c, schema, "SELECT p.proname || '(' || oidvectortypes(p.proargtypes)"
                        + " || ')' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ?"
                        + " AND p.proname <> ?");
                for (String f : functions) {
                    overloads.merge(f.substring(0, f.indexOf('(')), 1, Integer::sum);
                }
                migrated.put("Functions", functions);
            }
        } finally {
            TestDatabase.dropSchema(schema);
        }
        assertTrue(migrated.get("Functions").size() > 50 && migrated.get("Tables").size() > 5, migrated.toString());

        List<String> problems = new ArrayList<>();
        for (String kind : KINDS) {
            Set<String> inSchema = migrated.get(kind);
            Set<String> onPage = documented.getOrDefault(kind, Set.of());
            if (kind.equals("Functions")) {
                // A function named alone stands for its only signature; one with several must be named with each.
                inSchema = new TreeSet<>(inSchema.stream()
                        .map(f -> overloads.get(f.substring(0, f.indexOf('('))) == 1 ? f.substring(0, f.indexOf('('))
                                : f)
                        .toList());
            }
            Set<String> missing = new TreeSet<>(inSchema);
            missing.removeAll(onPage);
            Set<String> unknown = new TreeSet<>(onPage);
            unknown.removeAll(inSchema);
            if (!missing.isEmpty()) {
                problems.add(kind.toLowerCase() + " of the schema missing from docs/schema.md: " + missing);
            }
            if (!unknown.isEmpty()) {
                problems.add(kind.toLowerCase() + " named by docs/schema.md that a migrated schema does not have: "
                        + unknown);
            }
        }
        if (!problems.isEmpty()) {
            fail("docs/schema.md and the migrations disagree (a function with several signatures is named with "
                    + "its argument types, as listed):\n" + String.join("\n", problems));
        }
    }

    /** The names in the first column of each kind's tables, by the "## " heading they stand under. */
    private static Map<String, Set<String>> documented() throws IOException {
        Map<String, Set<String>> byKind = new TreeMap<>();
        String kind = null;
        for (String line : Files.readAllLines(PAGE)) {
            if (line.startsWith("## ")) {
                String heading = line.substring(3).strip();
                kind = KINDS.contains(heading) ? heading : null;
                continue;
            }
            Matcher m = ROW.matcher(line);
            if (kind != null && m.find()) {
                // Argument types are compared as PostgreSQL prints them: "bigint, text, boolean".
                String name = m.group(1).replaceAll("\\s*,\\s*", ", ").replace("( ", "(").replace(" )", ")");
                if (!byKind.computeIfAbsent(kind, k -> new TreeSet<>()).add(name)) {
                    fail("docs/schema.md names " + name + " twice under " + kind);
                }
            }
        }
        return byKind;
    }

    private static Set<String> names(Connection c, String schema, String sql) throws SQLException {
        Set<String> names = new TreeSet<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, schema);
            ps.setString(2, SchemaMigrator.LEDGER_TABLE);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    names.add(rs.getString(1));
                }
            }
        }
        return names;
    }
}
