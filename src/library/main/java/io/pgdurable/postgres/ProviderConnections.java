package io.pgdurable.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.MetricsTrackerFactory;
import io.pgdurable.internal.longpoll.NotificationListener;
import io.pgdurable.internal.longpoll.PgjdbcListener;
import io.pgdurable.internal.longpoll.PgjdbcNgListener;
import io.pgdurable.spi.ProviderException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a provider's connections come from: its own pool (or the application's {@code DataSource}, checked), the
 * migrations' connections, the pool's "is the server back?" probe and the long-poll listener's connection, each to
 * the URL it needs (docs/pgbouncer.md). Opening them is what fails with a clear, classified error.
 */
final class ProviderConnections {
    private static final Logger LOG = LoggerFactory.getLogger(ProviderConnections.class);

    private ProviderConnections() {}

    /** The pool a provider opens when it is given no data source; see {@link PostgresProvider#openPool}. */
    static HikariDataSource openPool(PostgresProviderConfig config) {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(config.jdbcUrl());
        if (config.username() != null) {
            hc.setUsername(config.username());
        }
        if (config.password() != null) {
            hc.setPassword(config.password());
        }
        hc.setPoolName("pgdurable-" + config.schema());
        hc.setMaximumPoolSize(config.poolSize());
        hc.setMinimumIdle(Math.min(2, config.poolSize()));
        hc.setConnectionTimeout(Math.max(250, config.connectionTimeout().toMillis()));
        hc.setAutoCommit(true);
        hc.addDataSourceProperty("ApplicationName", "pgdurable");
        if (config.transactionPooler()) {
            // A named server-side statement lives in the server session, which a transaction pooler hands to other
            // clients after every transaction: unnamed statements only. Assuming a 9.0+ server puts
            // extra_float_digits and application_name in the startup packet instead of session SETs that would stay
            // behind on whichever server connection ran them.
            hc.addDataSourceProperty("prepareThreshold", "0");
            hc.addDataSourceProperty("assumeMinServerVersion", "9.0");
        }
        try {
            return new HikariDataSource(hc);
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            // A refused connection (a missing database, failed authentication) stays refused however often it is
            // tried: classified like any other database error. Anything else (no answer at all) may pass.
            SQLException sql = cause instanceof SQLException s ? s : null;
            String state = sql == null ? null : sql.getSQLState();
            throw new ProviderException("connect", "cannot open a connection pool to "
                    + JdbcUrls.redact(config.jdbcUrl()) + ": " + SqlErrors.connectFailure(cause),
                    sql == null || SqlErrors.isRetryable(sql, state), state, e);
        }
    }

    /**
     * The provider's own pool, renewed when the server comes back ({@link RenewingPool}), every pool reporting to
     * {@code poolMetrics} when there is one (a running HikariCP pool takes its tracker once).
     */
    static RenewingPool ownedPool(PostgresProviderConfig config, MetricsTrackerFactory poolMetrics) {
        return new RenewingPool(() -> {
            HikariDataSource pool = openPool(config);
            if (poolMetrics != null) {
                pool.setMetricsTrackerFactory(poolMetrics);
            }
            return pool;
        }, probeSource(config), Math.max(250, config.connectionTimeout().toMillis()));
    }

    /** @param livenessLock whether the listener's sessions hold a liveness lock (hand-over across processes) */
    static NotificationListener listener(PostgresProviderConfig config, boolean livenessLock) {
        String url = withCredentials(config.effectiveListenerUrl(), config.username(), config.password());
        return config.listenerDriver() == PostgresProviderConfig.ListenerDriver.PGJDBC
                ? new PgjdbcListener(url, NotificationListener.DEFAULT_CONNECT_TIMEOUT, livenessLock)
                : new PgjdbcNgListener(url, NotificationListener.DEFAULT_CONNECT_TIMEOUT, livenessLock);
    }

    /** Credentials configured beside the URL travel inside it for the listener's own connection. */
    private static String withCredentials(String url, String user, String password) {
        StringBuilder sb = new StringBuilder(url);
        char sep = url.contains("?") ? '&' : '?';
        if (user != null && !url.contains("user=")) {
            sb.append(sep).append("user=").append(URLEncoder.encode(user, StandardCharsets.UTF_8));
            sep = '&';
        }
        if (password != null && !url.contains("password=")) {
            sb.append(sep).append("password=").append(URLEncoder.encode(password, StandardCharsets.UTF_8));
        }
        return sb.toString();
    }

    /**
     * Migrations hold one connection for the advisory lock while Flyway works on others, so they do not borrow from
     * the provider's pool (a pool of one would deadlock); with a URL they open short-lived connections of their own.
     * The lock is a session lock and Flyway sets {@code search_path}, so behind a transaction pooler they must reach
     * the server directly: {@code directUrl}, whenever it is set.
     */
    static DataSource migrationSource(PostgresProviderConfig config) {
        if (config.directUrl() != null) {
            PGSimpleDataSource direct = new PGSimpleDataSource();
            direct.setURL(withCredentials(config.directUrl(), config.username(), config.password()));
            direct.setApplicationName("pgdurable-migrate");
            return direct;
        }
        if (config.dataSource() != null) {
            return config.dataSource();
        }
        return unpooledSource(config, "pgdurable-migrate");
    }

    /**
     * The pool's "is the server back?" connection (see {@link RenewingPool}): it goes where the pool's connections go
     * ({@code jdbcUrl}, through a pooler if there is one) and answers or fails within seconds.
     */
    private static DataSource probeSource(PostgresProviderConfig config) {
        PGSimpleDataSource probe = unpooledSource(config, "pgdurable-probe");
        probe.setConnectTimeout(2);
        probe.setLoginTimeout(2);
        return probe;
    }

    /**
     * Connections to {@code jdbcUrl} outside the pool for {@link TransactionPoolerCheck}. They may be going through
     * the very pooler the check looks for, so they leave nothing in a server session: no server-side statements
     * whatever the URL says, and pgjdbc's set-up in the startup packet rather than session {@code SET}s. Connecting
     * or a statement gives up within the pool's connection timeout (2 to 30 s), so a session-mode pooler with no
     * session to spare delays the start only that long.
     */
    static DataSource poolerCheckSource(PostgresProviderConfig config) {
        PGSimpleDataSource check = unpooledSource(config, "pgdurable-check");
        int seconds = (int) Math.max(2, Math.min(30, config.connectionTimeout().toSeconds()));
        check.setPrepareThreshold(0);
        check.setAssumeMinServerVersion("9.0");
        check.setConnectTimeout(seconds);
        check.setLoginTimeout(seconds);
        check.setSocketTimeout(seconds);
        return check;
    }

    /** One connection at a time to {@code jdbcUrl}, outside the pool, named {@code applicationName}. */
    private static PGSimpleDataSource unpooledSource(PostgresProviderConfig config, String applicationName) {
        PGSimpleDataSource direct = new PGSimpleDataSource();
        direct.setURL(config.jdbcUrl());
        if (config.username() != null) {
            direct.setUser(config.username());
        }
        if (config.password() != null) {
            direct.setPassword(config.password());
        }
        direct.setApplicationName(applicationName);
        return direct;
    }

    /**
     * A DataSource we do not own cannot be reconfigured, so behind a transaction pooler its connections must already
     * prepare nothing on the server; otherwise the first busy minute fails with "prepared statement S_n already
     * exists". Only pgjdbc connections can be asked; others are taken on trust (docs/pgbouncer.md).
     */
    static void checkNoServerPrepares(DataSource dataSource) {
        try (Connection c = dataSource.getConnection()) {
            if (c.isWrapperFor(PGConnection.class)) {
                int threshold = c.unwrap(PGConnection.class).getPrepareThreshold();
                if (threshold != 0) {
                    throw ProviderException.permanent("connect", "transactionPooler is on, but the DataSource's "
                            + "connections prepare statements on the server (pgjdbc prepareThreshold=" + threshold
                            + "); set prepareThreshold=0 on the DataSource (a URL parameter or a data source "
                            + "property), see docs/pgbouncer.md");
                }
            } else {
                LOG.info("pgdurable: transactionPooler is on and the DataSource's connections are not pgjdbc's; "
                        + "make sure they prepare no statement on the server (docs/pgbouncer.md)");
            }
        } catch (SQLException e) {
            throw SqlErrors.translate("connect", e);
        }
    }
}
