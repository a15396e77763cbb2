package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link AtomicityTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxAtomicityTest extends AtomicityTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
