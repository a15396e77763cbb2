package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link ErrorHandlingTests} with long polling on. */
class PgLongErrorHandlingTest extends ErrorHandlingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
