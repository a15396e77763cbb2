package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link ManagementTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxManagementTest extends ManagementTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
