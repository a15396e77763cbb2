package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link KvStoreTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxKvStoreTest extends KvStoreTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
