package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link InstanceLockingTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxInstanceLockingTest extends InstanceLockingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
