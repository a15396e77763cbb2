package io.pgdurable.postgres;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/** Validates the identifiers that reach SQL text (schema names) and quotes them; nothing else is ever spliced in. */
public final class Identifiers {
    /** PostgreSQL truncates identifiers at 63 bytes; longer names would silently collide, so they are refused. */
    public static final int MAX_BYTES = 63;
    private static final Pattern SAFE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private Identifiers() {}

    /** Returns the schema name unchanged if it is safe, else throws {@link IllegalArgumentException} saying why. */
    public static String checkSchemaName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("schema name must not be empty");
        }
        if (name.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
            throw new IllegalArgumentException("schema name is " + name.getBytes(StandardCharsets.UTF_8).length
                    + " bytes; PostgreSQL identifiers hold at most " + MAX_BYTES);
        }
        if (!SAFE.matcher(name).matches()) {
            throw new IllegalArgumentException("schema name " + printable(name) + " may contain only ASCII letters, "
                    + "digits and '_' and must not start with a digit");
        }
        if (name.toLowerCase(java.util.Locale.ROOT).startsWith("pg_")) {
            throw new IllegalArgumentException("schema name " + printable(name)
                    + " starts with 'pg_', which PostgreSQL reserves for system schemas");
        }
        return name;
    }

    /** The double-quoted form of a checked identifier. */
    public static String quote(String checkedName) {
        return '"' + checkSchemaName(checkedName) + '"';
    }

    private static String printable(String name) {
        String shown = name.length() > 40 ? name.substring(0, 40) + "…" : name;
        return "'" + shown.replaceAll("\\p{Cntrl}", "?") + "'";
    }
}
