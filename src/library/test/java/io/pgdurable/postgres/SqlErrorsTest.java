package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.ProviderException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The retryable/permanent split of database failures (docs/decisions.md). */
class SqlErrorsTest {

    @Test
    void transient_conditions_are_retryable() {
        for (String state : List.of("08006", "08001", "53300", "53200", "57P01", "57014", "40P01", "40001", "55P03",
                "0A000")) {
            ProviderException e = SqlErrors.translate("op", new SQLException("boom", state));
            assertTrue(e.retryable(), state);
            assertEquals(state, e.sqlState().orElseThrow());
        }
        assertTrue(SqlErrors.translate("op", new SQLTransientConnectionException("pool timeout")).retryable());
        assertTrue(SqlErrors.translate("op", new SQLTransientConnectionException("pool timeout",
                new SQLException("connection refused", "08001"))).retryable());
    }

    @Test
    void a_pool_timeout_over_a_refused_login_is_permanent() {
        for (String state : List.of("28P01", "28000", "3D000")) {
            ProviderException e = SqlErrors.translate("op", new SQLTransientConnectionException("pool timeout",
                    new SQLException("refused", state)));
            assertFalse(e.retryable(), state);
        }
    }

    @Test
    void a_provider_on_a_missing_database_fails_permanently_at_start() {
        String missing = TestDatabase.url().replaceFirst("^(jdbc:postgresql://[^/]+/)[^?]*", "$1pgdurable_no_such_db");
        ProviderException e = org.junit.jupiter.api.Assertions.assertThrows(ProviderException.class,
                () -> PostgresProvider.create(PostgresProviderConfig.builder().jdbcUrl(missing).build()));
        assertFalse(e.retryable(), e.getMessage());
        assertEquals("3D000", e.sqlState().orElseThrow(), e.getMessage());
        assertTrue(e.getMessage().contains("pgdurable_no_such_db"), e.getMessage());
    }

    @Test
    void request_errors_are_permanent_and_keep_the_server_message() {
        for (String state : List.of("PD001", "PD002", "PD003", "PD004", "23505", "23503", "22P02", "42883", "28P01",
                "XX000")) {
            ProviderException e = SqlErrors.translate("ackOrchestrationItem", new SQLException("server said", state));
            assertFalse(e.retryable(), state);
            assertTrue(e.getMessage().startsWith("ackOrchestrationItem: server said"), e.getMessage());
        }
        assertFalse(SqlErrors.translate("op", new SQLException("no state")).retryable());
    }
}
