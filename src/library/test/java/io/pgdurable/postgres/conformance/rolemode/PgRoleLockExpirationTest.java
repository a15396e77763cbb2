package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link LockExpirationTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleLockExpirationTest extends LockExpirationTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
