package io.pgdurable.postgres.conformance.rolemode;

import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.postgres.RuntimeRoleTestFactory;

/** {@link KvStoreTests} as a least-privilege runtime role (docs/roles.md), long polling on. */
class PgRoleKvStoreTest extends KvStoreTests {
    @Override
    protected ProviderFactory newFactory() {
        return new RuntimeRoleTestFactory();
    }
}
