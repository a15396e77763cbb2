package io.pgdurable.postgres.pgbouncer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A provider with default settings whose pool goes through a transaction pooler (PgBouncer in transaction mode) is
 * refused at start, before it runs a statement there; declared with {@code transactionPooler} it works, and neither
 * the server itself nor a session-mode pooler is refused.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class UndeclaredTransactionPoolerTest {
    private static final Duration LOCK = Duration.ofSeconds(60);

    @Test
    void default_settings_through_a_transaction_pooler_are_refused_at_start_and_change_nothing()
            throws SQLException {
        String schema = TestDatabase.newSchemaName("pgb_undeclared");
        String fresh = TestDatabase.newSchemaName("pgb_undeclared_fresh");
        try (PostgresProvider direct = PostgresProvider.create(TestDatabase.config(schema).build())) {
            direct.enqueueForWorker(new WorkItem.ActivityExecute("stored-before", 1, 1, "Act", "{}"));

            assertRefused(TestDatabase.config(schema).jdbcUrl(PgBouncer.url()));
            // directUrl alone does not declare the pooler: the pool would still prepare statements through it
            assertRefused(TestDatabase.config(schema).jdbcUrl(PgBouncer.url()).directUrl(TestDatabase.url())
                    .longPolling(true));
            assertRefused(TestDatabase.config(fresh).jdbcUrl(PgBouncer.url()));

            assertFalse(schemaExists(fresh), "the refused provider created its schema");
            FetchedWorkItem f = direct.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
            assertEquals("stored-before", f.item().instance());
            direct.ackWorkItem(f.lockToken(), null);
            assertEquals(Optional.empty(), direct.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()),
                    "the refused providers stored nothing");
        } finally {
            TestDatabase.dropSchema(schema);
            TestDatabase.dropSchema(fresh);
        }
    }

    @Test
    void declared_with_transaction_pooler_the_same_pooler_works() {
        String schema = TestDatabase.newSchemaName("pgb_declared");
        try (PostgresProvider p = PostgresProvider.create(PgBouncer.route(TestDatabase.config(schema)).build())) {
            oneRound(p, "declared");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void the_server_itself_is_not_refused() {
        String schema = TestDatabase.newSchemaName("pgb_direct_ok");
        try (PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema).build())) {
            oneRound(p, "direct");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    /** A session pooler gives each client one server session for its whole life: nothing to declare. */
    @Test
    void a_session_mode_pooler_is_not_refused() {
        String schema = TestDatabase.newSchemaName("pgb_session_ok");
        try (PostgresProvider p = PostgresProvider.create(TestDatabase.config(schema)
                .jdbcUrl(PgBouncer.sessionModeUrl()).build())) {
            oneRound(p, "session-pooled");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    private static void assertRefused(PostgresProviderConfig.Builder config) {
        ProviderException e = assertThrows(ProviderException.class, () -> PostgresProvider.create(config.build())
                .close());
        assertFalse(e.retryable(), e.getMessage());
        assertTrue(e.getMessage().contains("goes through a transaction pooler"), e.getMessage());
        assertTrue(e.getMessage().contains("set transactionPooler(true) and directUrl"), e.getMessage());
        assertTrue(e.getMessage().contains("docs/pgbouncer.md"), e.getMessage());
    }

    private static boolean schemaExists(String schema) throws SQLException {
        return TestDatabase.withMaintenanceConnection(c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
                ps.setString(1, schema);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next();
                }
            }
        });
    }

    /** An enqueue, a fetch of that item and its ack. */
    private static void oneRound(PostgresProvider p, String instance) {
        p.enqueueForWorker(new WorkItem.ActivityExecute(instance, 1, 1, "Act", "{}"));
        FetchedWorkItem f = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()).orElseThrow();
        assertEquals(instance, f.item().instance());
        p.ackWorkItem(f.lockToken(), null);
        assertEquals(Optional.empty(), p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.any()),
                "the acked item is gone");
    }
}
