package io.pgdurable.postgres.pgbouncer;

import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.api.Nested;

/**
 * The state and management conformance modules (key-value store, custom status, management, deletion, bulk deletion,
 * pruning) with long polling on, each provider's pool going through a real PgBouncer in transaction mode
 * ({@code transactionPooler(true)}) and migrations and the listener direct ({@code directUrl}); see
 * {@link PgBouncerQueueConformanceTest}.
 */
class PgBouncerManagementConformanceTest {

    @Nested
    class KvStore extends KvStoreTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class CustomStatus extends CustomStatusTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class Management extends ManagementTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class Deletion extends DeletionTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class BulkDeletion extends BulkDeletionTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class Prune extends PruneTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }
}
