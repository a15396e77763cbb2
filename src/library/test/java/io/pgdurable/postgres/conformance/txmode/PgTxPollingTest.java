package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link LongPollingTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxPollingTest extends LongPollingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
