package io.pgdurable.postgres;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Everything a {@link PostgresProvider} needs, validated once in {@link Builder#build()}. Immutable.
 *
 * <p>Connect either by JDBC URL (the provider owns a HikariCP pool of {@code poolSize} connections) or by a
 * {@link DataSource} you own (the provider neither sizes nor closes it).
 */
public final class PostgresProviderConfig {
    public static final String DEFAULT_SCHEMA = "pgdurable";
    public static final int DEFAULT_POOL_SIZE = 10;
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 4 * 1024 * 1024;

    private final String jdbcUrl;
    private final String username;
    private final String password;
    private final DataSource dataSource;
    private final String schema;
    private final int poolSize;
    private final Duration connectionTimeout;
    private final MigrationPolicy migrationPolicy;
    private final Clock clock;
    private final int maxPayloadBytes;
    private final Duration migrationLockTimeout;
    private final Duration migrationLockBudget;

    private PostgresProviderConfig(Builder b) {
        this.jdbcUrl = b.jdbcUrl;
        this.username = b.username;
        this.password = b.password;
        this.dataSource = b.dataSource;
        this.schema = b.schema;
        this.poolSize = b.poolSize;
        this.connectionTimeout = b.connectionTimeout;
        this.migrationPolicy = b.migrationPolicy;
        this.clock = b.clock;
        this.maxPayloadBytes = b.maxPayloadBytes;
        this.migrationLockTimeout = b.migrationLockTimeout;
        this.migrationLockBudget = b.migrationLockBudget;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder pre-filled with this configuration, to derive a variant. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.jdbcUrl = jdbcUrl;
        b.username = username;
        b.password = password;
        b.dataSource = dataSource;
        b.schema = schema;
        b.poolSize = poolSize;
        b.connectionTimeout = connectionTimeout;
        b.migrationPolicy = migrationPolicy;
        b.clock = clock;
        b.maxPayloadBytes = maxPayloadBytes;
        b.migrationLockTimeout = migrationLockTimeout;
        b.migrationLockBudget = migrationLockBudget;
        return b;
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    public String username() {
        return username;
    }

    String password() {
        return password;
    }

    public DataSource dataSource() {
        return dataSource;
    }

    public String schema() {
        return schema;
    }

    public int poolSize() {
        return poolSize;
    }

    public Duration connectionTimeout() {
        return connectionTimeout;
    }

    public MigrationPolicy migrationPolicy() {
        return migrationPolicy;
    }

    public Clock clock() {
        return clock;
    }

    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    public Duration migrationLockTimeout() {
        return migrationLockTimeout;
    }

    public Duration migrationLockBudget() {
        return migrationLockBudget;
    }

    /** Never shows a password, whether given separately or inside the URL. */
    @Override
    public String toString() {
        return "PostgresProviderConfig{" + (jdbcUrl != null ? "url=" + redactUrl(jdbcUrl) : "dataSource=" + dataSource)
                + ", schema=" + schema + ", poolSize=" + poolSize + ", migrationPolicy=" + migrationPolicy
                + ", maxPayloadBytes=" + maxPayloadBytes + "}";
    }

    /** The URL with any password parameter value replaced. */
    public static String redactUrl(String url) {
        return url == null ? null : url.replaceAll("(?i)(password=)[^&;]*", "$1***")
                .replaceAll("(//[^/:@]+:)[^@/]*@", "$1***@");
    }

    public static final class Builder {
        private String jdbcUrl;
        private String username;
        private String password;
        private DataSource dataSource;
        private String schema = DEFAULT_SCHEMA;
        private int poolSize = DEFAULT_POOL_SIZE;
        private Duration connectionTimeout = Duration.ofSeconds(10);
        private MigrationPolicy migrationPolicy = MigrationPolicy.APPLY_ALL;
        private Clock clock = Clock.systemUTC();
        private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        private Duration migrationLockTimeout = Duration.ofMillis(250);
        private Duration migrationLockBudget = Duration.ofSeconds(10);

        private Builder() {}

        /** A {@code jdbc:postgresql:} URL; the provider builds and owns a connection pool for it. */
        public Builder jdbcUrl(String url) {
            this.jdbcUrl = url;
            return this;
        }

        public Builder username(String username) {
            this.username = username;
            return this;
        }

        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /** A data source you own instead of a URL; {@code poolSize} is then yours to set on it. */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** The task hub's schema (letters, digits, '_'; at most 63 bytes). Default {@value #DEFAULT_SCHEMA}. */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        public Builder poolSize(int poolSize) {
            this.poolSize = poolSize;
            return this;
        }

        /** How long an operation waits for a pooled connection before failing (retryable). */
        public Builder connectionTimeout(Duration timeout) {
            this.connectionTimeout = timeout;
            return this;
        }

        public Builder migrationPolicy(MigrationPolicy policy) {
            this.migrationPolicy = policy;
            return this;
        }

        /** The application clock used for every lease and visibility decision. */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /** Largest accepted work item, event, output or key-value value, in UTF-8 bytes. */
        public Builder maxPayloadBytes(int bytes) {
            this.maxPayloadBytes = bytes;
            return this;
        }

        /** How long one attempt waits for another node's migration lock before retrying (default 250 ms). */
        public Builder migrationLockTimeout(Duration timeout) {
            this.migrationLockTimeout = timeout;
            return this;
        }

        /** Total time spent retrying the migration lock before start-up fails (default 10 s). */
        public Builder migrationLockBudget(Duration budget) {
            this.migrationLockBudget = budget;
            return this;
        }

        public PostgresProviderConfig build() {
            if ((jdbcUrl == null) == (dataSource == null)) {
                throw new IllegalArgumentException("configure exactly one of jdbcUrl or dataSource");
            }
            if (jdbcUrl != null && !jdbcUrl.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("jdbcUrl must start with 'jdbc:postgresql:', was '"
                        + redactUrl(jdbcUrl) + "'");
            }
            Identifiers.checkSchemaName(schema);
            if (poolSize < 1 || poolSize > 1000) {
                throw new IllegalArgumentException("poolSize must be in 1..1000, was " + poolSize);
            }
            positive("connectionTimeout", connectionTimeout);
            positive("migrationLockTimeout", migrationLockTimeout);
            positive("migrationLockBudget", migrationLockBudget);
            Objects.requireNonNull(migrationPolicy, "migrationPolicy");
            Objects.requireNonNull(clock, "clock");
            if (maxPayloadBytes < 1024) {
                throw new IllegalArgumentException("maxPayloadBytes must be at least 1024, was " + maxPayloadBytes);
            }
            return new PostgresProviderConfig(this);
        }

        private static void positive(String name, Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be a positive duration, was " + d);
            }
        }
    }
}
