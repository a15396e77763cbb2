package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link SessionsTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxSessionsTest extends SessionsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
