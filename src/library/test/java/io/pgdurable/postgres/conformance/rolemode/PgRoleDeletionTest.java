package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link DeletionTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleDeletionTest extends DeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
