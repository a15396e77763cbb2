package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link SessionsTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleSessionsTest extends SessionsTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
