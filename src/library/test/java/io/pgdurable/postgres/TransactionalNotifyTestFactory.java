package io.pgdurable.postgres;

/**
 * The conformance kit's factory with long polling on and {@code transactionalNotify}: every write of the provider
 * fires the schema's notify triggers inside its own transaction, so the whole contract runs with them.
 */
public class TransactionalNotifyTestFactory extends LongPollTestFactory {

    @Override
    protected PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return super.configure(builder).transactionalNotify(true);
    }
}
