package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link ErrorHandlingTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleErrorHandlingTest extends ErrorHandlingTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
