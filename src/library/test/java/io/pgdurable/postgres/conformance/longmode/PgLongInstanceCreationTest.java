package io.pgdurable.postgres.conformance.longmode;

import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.LongPollTestFactory;

/** {@link InstanceCreationTests} with long polling on. */
class PgLongInstanceCreationTest extends InstanceCreationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new LongPollTestFactory();
    }
}
