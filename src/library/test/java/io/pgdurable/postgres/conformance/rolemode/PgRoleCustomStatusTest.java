package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link CustomStatusTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleCustomStatusTest extends CustomStatusTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
