package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link CapabilityFilteringTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleCapabilityFilteringTest extends CapabilityFilteringTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
