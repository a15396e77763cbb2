package io.pgdurable.postgres.pgbouncer;

import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.PostgresTestFactory;

/**
 * The conformance kit's factory with every provider's pool going through {@link PgBouncer} in transaction mode
 * ({@code transactionPooler}), migrations and the long-poll listener direct ({@code directUrl}).
 */
public final class PgBouncerTestFactory extends PostgresTestFactory {
    private final boolean longPolling;

    public PgBouncerTestFactory(boolean longPolling) {
        this.longPolling = longPolling;
    }

    @Override
    protected PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return PgBouncer.route(builder).longPolling(longPolling);
    }

    @Override
    public boolean longPolling() {
        return longPolling;
    }
}
