package io.pgdurable.postgres.longpoll;

import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.pgbouncer.PgBouncer;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Every long-poll provider test with the provider's pool going through a real PgBouncer in transaction mode
 * ({@code transactionPooler}) and the listener and migrations direct ({@code directUrl}): claims, scans, probes,
 * announcements and inline NOTIFYs all travel through the pooler. The randomized test's commits wait for the WAL
 * flush here (its asynchronous-commit URL is a direct one, replaced by the pooler's).
 */
@Isolated("timing: wake latencies and timer accuracy are asserted in milliseconds")
class PgBouncerLongPollProviderTest extends LongPollProviderTest {
    @Override
    UnaryOperator<PostgresProviderConfig.Builder> route() {
        return PgBouncer::route;
    }
}
