package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link InstanceCreationTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleInstanceCreationTest extends InstanceCreationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
