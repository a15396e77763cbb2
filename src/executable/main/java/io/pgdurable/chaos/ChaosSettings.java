package io.pgdurable.chaos;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.postgres.PostgresProviderConfig;
import java.time.Duration;
import java.util.Properties;

/**
 * What one chaos run does, validated once: the database, the schema, how long, and the load. The database must be
 * a single host (the relays stand in front of it).
 */
public record ChaosSettings(String jdbcUrl, String schema, Duration duration, int producers, int consumers,
                            int itemsPerSecond, PostgresProviderConfig.ListenerDriver listenerDriver) {
    public static final String DEFAULT_SCHEMA = "pgdurable_chaos";
    public static final Duration MIN_DURATION = Duration.ofSeconds(5);
    public static final Duration MAX_DURATION = Duration.ofHours(24);

    public ChaosSettings {
        if (jdbcUrl == null) {
            throw new IllegalArgumentException("the database URL is required");
        }
        // the provider's own checks: the URL parses, the schema is a valid name
        PostgresProviderConfig.builder().jdbcUrl(jdbcUrl).schema(schema).build();
        Identifiers.checkSchemaName(schema);
        String host = host(jdbcUrl);
        if (host.contains(",")) {
            throw new IllegalArgumentException("the database URL names several hosts (" + host + "); chaos relays "
                    + "to one server, give its URL alone");
        }
        if (duration == null || duration.compareTo(MIN_DURATION) < 0 || duration.compareTo(MAX_DURATION) > 0) {
            throw new IllegalArgumentException("the run must last between " + MIN_DURATION.toSeconds() + " s and "
                    + MAX_DURATION.toHours() + " h, was " + (duration == null ? "none" : duration.toMillis() / 1000.0
                    + " s"));
        }
        range("producers", producers, 1, 64);
        range("consumers", consumers, 1, 64);
        range("rate", itemsPerSecond, 1, 100_000);
        if (listenerDriver == null) {
            throw new IllegalArgumentException("the listener driver is required");
        }
    }

    private static void range(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException("--" + name + " must be between " + min + " and " + max + ", was "
                    + value);
        }
    }

    /** The server's host as the driver reads the URL. */
    public String host() {
        return host(jdbcUrl);
    }

    /** The server's port as the driver reads the URL. */
    public int port() {
        return Integer.parseInt(parsed(jdbcUrl).getProperty("PGPORT", "5432"));
    }

    /**
     * The same URL pointed at a relay on the loopback interface: host and port replaced, database and parameters
     * kept.
     */
    public String throughRelay(int relayPort) {
        String rest;
        if (jdbcUrl.startsWith("jdbc:postgresql://")) {
            String afterSlashes = jdbcUrl.substring("jdbc:postgresql://".length());
            int end = indexOfAny(afterSlashes, "/?");
            rest = end < 0 ? "/" : afterSlashes.substring(end);
            if (!rest.startsWith("/")) {
                rest = "/" + rest;
            }
        } else {
            rest = "/" + jdbcUrl.substring("jdbc:postgresql:".length());
        }
        return "jdbc:postgresql://127.0.0.1:" + relayPort + rest;
    }

    private static int indexOfAny(String s, String chars) {
        for (int i = 0; i < s.length(); i++) {
            if (chars.indexOf(s.charAt(i)) >= 0) {
                return i;
            }
        }
        return -1;
    }

    private static String host(String url) {
        String host = parsed(url).getProperty("PGHOST", "localhost");
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    private static Properties parsed(String url) {
        Properties p = org.postgresql.Driver.parseURL(url, null);
        if (p == null) {
            throw new IllegalArgumentException("the database URL is not one the PostgreSQL driver can read, was '"
                    + JdbcUrls.redact(url) + "'");
        }
        return p;
    }
}
