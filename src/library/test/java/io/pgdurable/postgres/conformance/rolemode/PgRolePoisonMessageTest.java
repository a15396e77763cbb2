package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link PoisonMessageTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRolePoisonMessageTest extends PoisonMessageTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
