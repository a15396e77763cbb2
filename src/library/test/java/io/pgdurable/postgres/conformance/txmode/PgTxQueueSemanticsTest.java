package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link QueueSemanticsTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxQueueSemanticsTest extends QueueSemanticsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
