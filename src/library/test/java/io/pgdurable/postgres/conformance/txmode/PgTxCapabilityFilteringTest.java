package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link CapabilityFilteringTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxCapabilityFilteringTest extends CapabilityFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
