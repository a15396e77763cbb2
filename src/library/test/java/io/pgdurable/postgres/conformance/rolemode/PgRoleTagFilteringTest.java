package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link TagFilteringTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleTagFilteringTest extends TagFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
