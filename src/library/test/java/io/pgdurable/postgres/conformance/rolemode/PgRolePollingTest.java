package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link LongPollingTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRolePollingTest extends LongPollingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
