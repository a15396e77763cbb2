package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link MultiExecutionTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleMultiExecutionTest extends MultiExecutionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
