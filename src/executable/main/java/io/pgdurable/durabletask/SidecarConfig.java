package io.pgdurable.durabletask;

import java.time.Duration;
import java.util.Objects;

/**
 * How the sidecar serves: where it listens and how it drives the provider.
 *
 * @param host          the address to bind; 127.0.0.1 by default (without mutual TLS the protocol has no
 *                      authentication)
 * @param port          0 picks a free port
 * @param lockTimeout   lease of a turn or an activity handed to a worker; renewed every third of it while the
 *                      worker holds it, so a vanished worker's item comes back after at most this long
 * @param pollTimeout   how long one fetch parks (long polling) before the loop looks again
 * @param longPolling   whether the provider parks fetches; without it an empty fetch is followed by
 *                      {@code shortPollInterval} of sleep
 * @param shortPollInterval the pause after an empty fetch of a short-polling provider
 * @param statusJdbcUrl a jdbc:postgresql URL for status notifications between sidecars sharing the database (LISTEN
 *                      and NOTIFY on a channel of the schema); null = this process's own acks only
 * @param schema        the task hub's schema, which names the notification channel
 * @param waitFallback  how often a waiting client call re-reads the status when no notification came
 * @param shutdownGrace how long a stop waits for work the workers hold before abandoning it
 * @param tls           TLS, and with a client CA mutual TLS; null = plaintext, fit for loopback only
 * @param limits        how much one request may carry ({@link RequestLimits#DEFAULTS} unless told otherwise)
 */
public record SidecarConfig(String host, int port, Duration lockTimeout, Duration pollTimeout, boolean longPolling,
                            Duration shortPollInterval, String statusJdbcUrl, String schema, Duration waitFallback,
                            Duration shutdownGrace, SidecarTls tls, RequestLimits limits) {
    public static final int DEFAULT_PORT = 4001;

    /** Plaintext: the configuration as it was before TLS. */
    public SidecarConfig(String host, int port, Duration lockTimeout, Duration pollTimeout, boolean longPolling,
                         Duration shortPollInterval, String statusJdbcUrl, String schema, Duration waitFallback,
                         Duration shutdownGrace) {
        this(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval, statusJdbcUrl, schema,
                waitFallback, shutdownGrace, null, RequestLimits.DEFAULTS);
    }

    /** With TLS and the default request limits. */
    public SidecarConfig(String host, int port, Duration lockTimeout, Duration pollTimeout, boolean longPolling,
                         Duration shortPollInterval, String statusJdbcUrl, String schema, Duration waitFallback,
                         Duration shutdownGrace, SidecarTls tls) {
        this(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval, statusJdbcUrl, schema,
                waitFallback, shutdownGrace, tls, RequestLimits.DEFAULTS);
    }

    public SidecarConfig {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
        positive(lockTimeout, "lockTimeout");
        positive(pollTimeout, "pollTimeout");
        positive(shortPollInterval, "shortPollInterval");
        positive(waitFallback, "waitFallback");
        Objects.requireNonNull(shutdownGrace, "shutdownGrace");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(limits, "limits");
    }

    /**
     * Defaults for {@code schema} on 127.0.0.1:{@value #DEFAULT_PORT}, long polling, no cross-process status, no TLS,
     * the default request limits.
     */
    public static SidecarConfig defaults(String schema) {
        return new SidecarConfig("127.0.0.1", DEFAULT_PORT, Duration.ofSeconds(30), Duration.ofSeconds(10), true,
                Duration.ofMillis(100), null, schema, Duration.ofSeconds(2), Duration.ofSeconds(5));
    }

    public SidecarConfig withPort(int newPort) {
        return new SidecarConfig(host, newPort, lockTimeout, pollTimeout, longPolling, shortPollInterval,
                statusJdbcUrl, schema, waitFallback, shutdownGrace, tls, limits);
    }

    public SidecarConfig withHost(String newHost) {
        return new SidecarConfig(newHost, port, lockTimeout, pollTimeout, longPolling, shortPollInterval,
                statusJdbcUrl, schema, waitFallback, shutdownGrace, tls, limits);
    }

    public SidecarConfig withLockTimeout(Duration timeout) {
        return new SidecarConfig(host, port, timeout, pollTimeout, longPolling, shortPollInterval, statusJdbcUrl,
                schema, waitFallback, shutdownGrace, tls, limits);
    }

    public SidecarConfig withLongPolling(boolean enabled) {
        return new SidecarConfig(host, port, lockTimeout, pollTimeout, enabled, shortPollInterval, statusJdbcUrl,
                schema, waitFallback, shutdownGrace, tls, limits);
    }

    public SidecarConfig withStatusJdbcUrl(String url) {
        return new SidecarConfig(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval, url, schema,
                waitFallback, shutdownGrace, tls, limits);
    }

    public SidecarConfig withWaitFallback(Duration fallback) {
        return new SidecarConfig(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval,
                statusJdbcUrl, schema, fallback, shutdownGrace, tls, limits);
    }

    public SidecarConfig withShutdownGrace(Duration grace) {
        return new SidecarConfig(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval,
                statusJdbcUrl, schema, waitFallback, grace, tls, limits);
    }

    public SidecarConfig withTls(SidecarTls newTls) {
        return new SidecarConfig(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval,
                statusJdbcUrl, schema, waitFallback, shutdownGrace, newTls, limits);
    }

    public SidecarConfig withLimits(RequestLimits newLimits) {
        return new SidecarConfig(host, port, lockTimeout, pollTimeout, longPolling, shortPollInterval,
                statusJdbcUrl, schema, waitFallback, shutdownGrace, tls, newLimits);
    }

    private static void positive(Duration d, String name) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + d);
        }
    }
}
