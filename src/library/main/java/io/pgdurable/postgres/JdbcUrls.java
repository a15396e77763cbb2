package io.pgdurable.postgres;

/** What the provider and the command do with a JDBC URL before using it: check it, and show it without a password. */
public final class JdbcUrls {
    private JdbcUrls() {}

    /**
     * Checks a URL the way {@link PostgresProviderConfig.Builder#build()} checks {@code jdbcUrl}, {@code directUrl}
     * and {@code listenerUrl}, naming it {@code name} in the message, so that a tool taking the URL under a name of
     * its own (a command-line option) reports the name its user typed. A null URL passes. The message never shows a
     * password.
     *
     * @throws IllegalArgumentException when the URL is not a {@code jdbc:postgresql:} URL the driver can read
     */
    public static void check(String name, String url) {
        if (url == null) {
            return;
        }
        if (!url.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException(name + " must start with 'jdbc:postgresql:', was '"
                    + redact(url) + "'");
        }
        // pgjdbc has no user:password@ part: it reads it as part of the host name, and the connection then fails
        // with an unknown host that names neither the mistake nor the fix.
        String prefix = "jdbc:postgresql://";
        if (url.startsWith(prefix)) {
            int end = url.length();
            for (char c : new char[] {'/', '?'}) {
                int i = url.indexOf(c, prefix.length());
                if (i >= 0 && i < end) {
                    end = i;
                }
            }
            if (url.substring(prefix.length(), end).contains("@")) {
                throw new IllegalArgumentException(name + " has a user (and password) before the host, which the "
                        + "PostgreSQL JDBC driver does not read: pass them as parameters instead, "
                        + "jdbc:postgresql://HOST:PORT/DATABASE?user=NAME&password=SECRET, was '"
                        + redact(url) + "'");
            }
        }
        // A URL the driver cannot parse (a port that is not a number, a malformed parameter) would otherwise surface
        // at the first connection as "No suitable driver", naming neither the URL nor the mistake.
        if (org.postgresql.Driver.parseURL(url, null) == null) {
            throw new IllegalArgumentException(name + " is not a URL the PostgreSQL driver can read (check the host, "
                    + "the port and the parameters), was '" + redact(url) + "'");
        }
    }

    /** The URL with any password (a parameter, or a {@code user:password@} part) replaced. */
    public static String redact(String url) {
        return url == null ? null : url.replaceAll("(?i)(password=)[^&;]*", "$1***")
                .replaceAll("(//[^/:@]+:)[^@/]*@", "$1***@");
    }
}
