package io.pgdurable.postgres.pgbouncer;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.BulkDeletionTests;
import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.CustomStatusTests;
import io.pgdurable.conformance.DeletionTests;
import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.KvStoreTests;
import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.ManagementTests;
import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.PruneTests;
import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.ShortPollingTests;
import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.api.Nested;

/**
 * The conformance modules with each provider's pool going through a real PgBouncer in transaction mode
 * ({@code transactionPooler(true)}) while migrations and the long-poll listener connect directly ({@code directUrl}):
 * every module with long polling on (parked fetches, announcements through the pooler, LISTEN direct), and the
 * short-polling module with it off. {@link PgBouncer} says where the PgBouncer comes from.
 *
 * <p>The modules run one after another (nested classes share their parent's thread), which also keeps the
 * PgBouncer's server connections within its pool.
 */
class PgBouncerConformanceTest {

    @Nested
    class Atomicity extends AtomicityTests {
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
    class Cancellation extends CancellationTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class CapabilityFiltering extends CapabilityFilteringTests {
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
    class Deletion extends DeletionTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class ErrorHandling extends ErrorHandlingTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class InstanceCreation extends InstanceCreationTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class InstanceLocking extends InstanceLockingTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class KvStore extends KvStoreTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class LockExpiration extends LockExpirationTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class LongPolling extends LongPollingTests {
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
    class MultiExecution extends MultiExecutionTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class PoisonMessage extends PoisonMessageTests {
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

    @Nested
    class QueueSemantics extends QueueSemanticsTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class Sessions extends SessionsTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class TagFiltering extends TagFilteringTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(true);
        }
    }

    @Nested
    class ShortPolling extends ShortPollingTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(false);
        }
    }
}
