package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link CancellationTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleCancellationTest extends CancellationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
