package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link PoisonMessageTests} with long polling on. */
class PgLongPoisonMessageTest extends PoisonMessageTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
