package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link MultiExecutionTests} with long polling on. */
class PgLongMultiExecutionTest extends MultiExecutionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
