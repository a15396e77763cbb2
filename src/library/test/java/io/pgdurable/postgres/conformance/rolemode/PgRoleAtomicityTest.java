package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link AtomicityTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleAtomicityTest extends AtomicityTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
