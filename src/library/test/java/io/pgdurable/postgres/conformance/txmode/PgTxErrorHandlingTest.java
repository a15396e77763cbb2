package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link ErrorHandlingTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxErrorHandlingTest extends ErrorHandlingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
