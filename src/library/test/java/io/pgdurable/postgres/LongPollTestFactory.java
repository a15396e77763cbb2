package io.pgdurable.postgres;

/** The conformance kit's factory with long polling on: every provider LISTENs and parks fetches. */
public class LongPollTestFactory extends PostgresTestFactory {

    @Override
    protected PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return builder.longPolling(true);
    }

    @Override
    public boolean longPolling() {
        return true;
    }
}
