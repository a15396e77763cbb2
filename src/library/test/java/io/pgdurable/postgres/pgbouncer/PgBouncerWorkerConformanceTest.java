package io.pgdurable.postgres.pgbouncer;

import io.pgdurable.conformance.CancellationTests;
import io.pgdurable.conformance.CapabilityFilteringTests;
import io.pgdurable.conformance.SessionsTests;
import io.pgdurable.conformance.TagFilteringTests;
import io.pgdurable.conformance.ProviderFactory;
import org.junit.jupiter.api.Nested;

/**
 * The worker-routing conformance modules (sessions, capability and tag filtering, cancellation) with long polling on,
 * each provider's pool going through a real PgBouncer in transaction mode ({@code transactionPooler(true)}) and
 * migrations and the listener direct ({@code directUrl}); see {@link PgBouncerQueueConformanceTest}.
 */
class PgBouncerWorkerConformanceTest {

    @Nested
    class Sessions extends SessionsTests {
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
    class TagFiltering extends TagFilteringTests {
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
}
