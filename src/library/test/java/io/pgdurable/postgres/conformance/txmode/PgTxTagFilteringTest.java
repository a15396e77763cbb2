package io.pgdurable.postgres.conformance.txmode;

import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.TransactionalNotifyTestFactory;

/** {@link TagFilteringTests} with long polling on and the provider's writes notifying from inside their transactions. */
class PgTxTagFilteringTest extends TagFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new TransactionalNotifyTestFactory();
    }
}
