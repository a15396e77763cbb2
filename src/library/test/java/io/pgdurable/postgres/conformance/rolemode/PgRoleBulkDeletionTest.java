package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link BulkDeletionTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleBulkDeletionTest extends BulkDeletionTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
