package io.pgdurable.postgres.pgbouncer;

import io.pgdurable.conformance.AtomicityTests;
import io.pgdurable.conformance.ErrorHandlingTests;
import io.pgdurable.conformance.InstanceCreationTests;
import io.pgdurable.conformance.InstanceLockingTests;
import io.pgdurable.conformance.LockExpirationTests;
import io.pgdurable.conformance.LongPollingTests;
import io.pgdurable.conformance.MultiExecutionTests;
import io.pgdurable.conformance.PoisonMessageTests;
import io.pgdurable.conformance.QueueSemanticsTests;
import io.pgdurable.conformance.ShortPollingTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.api.Nested;

/**
 * The queue conformance modules (atomicity, instance creation and locking, queue semantics, lock expiry, poison
 * messages, error handling, multiple executions, both polling modules) with each provider's pool going through a real
 * PgBouncer in transaction mode ({@code transactionPooler(true)}) while migrations and the long-poll listener connect
 * directly ({@code directUrl}). Long polling is on (parked fetches, announcements and inline NOTIFYs through the
 * pooler, LISTEN direct), except for the short-polling module. {@link PgBouncer} says where the PgBouncer comes from.
 *
 * <p>With {@link PgBouncerWorkerConformanceTest} and {@link PgBouncerManagementConformanceTest} this covers every
 * conformance module; the three classes run beside each other, the modules of one class one after another.
 */
class PgBouncerQueueConformanceTest {

    @Nested
    class Atomicity extends AtomicityTests {
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
    class QueueSemantics extends QueueSemanticsTests {
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
    class PoisonMessage extends PoisonMessageTests {
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
    class MultiExecution extends MultiExecutionTests {
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
    class ShortPolling extends ShortPollingTests {
        @Override
        protected ProviderFactory newFactory() {
            return new PgBouncerTestFactory(false);
        }
    }
}
