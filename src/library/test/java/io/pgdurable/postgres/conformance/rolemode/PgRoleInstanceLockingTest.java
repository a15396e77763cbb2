package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link InstanceLockingTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleInstanceLockingTest extends InstanceLockingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
