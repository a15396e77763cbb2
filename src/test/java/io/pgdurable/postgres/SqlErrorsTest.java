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
