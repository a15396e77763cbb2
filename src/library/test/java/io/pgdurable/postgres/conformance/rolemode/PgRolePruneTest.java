package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link PruneTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRolePruneTest extends PruneTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
