package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link QueueSemanticsTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleQueueSemanticsTest extends QueueSemanticsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
