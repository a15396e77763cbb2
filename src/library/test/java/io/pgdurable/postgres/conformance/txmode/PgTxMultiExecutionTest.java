package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link MultiExecutionTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxMultiExecutionTest extends MultiExecutionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
