package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link ManagementTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleManagementTest extends ManagementTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
