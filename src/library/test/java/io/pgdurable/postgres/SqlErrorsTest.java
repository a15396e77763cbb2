package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.ProviderException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

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

    /**
     * A host name the resolver cannot know: its first label is 64 characters, one more than DNS allows, so the C
     * library's resolver answers "Name or service not known" without sending a query (a name such as
     * {@code nonexistent.invalid} is sent to the configured name server); the test never leaves the machine.
     */
    static final String UNRESOLVABLE_HOST = "h".repeat(64) + ".invalid";

    /** What pgjdbc throws when the server refuses a login: the server's ErrorResponse fields, parsed. */
    static PSQLException loginRefused(String state, String message) {
        return new PSQLException(new ServerErrorMessage("SFATAL\0VFATAL\0C" + state + "\0M" + message
                + "\0Fauth.c\0L330\0Rauth_failed\0"));
    }

    @Test
    void a_refused_login_is_permanent_however_it_is_wrapped() {
        for (String[] refusal : List.of(
                new String[] {"28P01", "password authentication failed for user \"app\""},
                new String[] {"28000", "no pg_hba.conf entry for host \"127.0.0.1\", user \"app\", database \"app\", "
                        + "no encryption"})) {
            String state = refusal[0];
            PSQLException refused = loginRefused(state, refusal[1]);
            assertEquals(state, refused.getSQLState());
            ProviderException direct = SqlErrors.translate("connect", refused);
            assertFalse(direct.retryable(), state);
            assertEquals("connect: " + refusal[1] + " [SQLSTATE " + state + "]", direct.getMessage());
            // a listener or pool reports it inside a connection failure or a timeout, which alone is retryable
            assertFalse(SqlErrors.translate("listen", new SQLException("the listener could not connect", "08001",
                    refused)).retryable(), state);
            assertFalse(SqlErrors.translate("op", new SQLTransientConnectionException("pool timeout", refused))
                    .retryable(), state);
        }
    }

    @Test
    void a_host_name_that_does_not_resolve_is_permanent() throws Exception {
        SQLException e = org.junit.jupiter.api.Assertions.assertThrows(SQLException.class,
                () -> DriverManager.getConnection("jdbc:postgresql://" + UNRESOLVABLE_HOST
                        + ":5432/test?user=postgres&connectTimeout=10").close());
        assertTrue(causes(e, UnknownHostException.class), "the driver's failure carries no UnknownHostException, "
                + "so this test does not test it: " + e);
        assertEquals("08001", e.getSQLState(), "pgjdbc's state for it, which alone reads as retryable");
        assertFalse(SqlErrors.translate("connect", e).retryable(), e.toString());

        ProviderException p = org.junit.jupiter.api.Assertions.assertThrows(ProviderException.class,
                () -> PostgresProvider.openPool(PostgresProviderConfig.builder().jdbcUrl("jdbc:postgresql://"
                        + UNRESOLVABLE_HOST + "/test?user=postgres").build()).close());
        assertFalse(p.retryable(), p.getMessage());
        assertTrue(p.getMessage().contains("UnknownHostException"), p.getMessage());
    }

    @Test
    void a_name_server_that_does_not_answer_stays_retryable() {
        // the JDK's text for EAI_AGAIN: the name may resolve once the name server is back
        SQLException e = new SQLException("The connection attempt failed.", "08001",
                new UnknownHostException("db.internal: Temporary failure in name resolution"));
        assertTrue(SqlErrors.translate("connect", e).retryable());
    }

    @Test
    void a_server_that_is_down_or_shutting_down_stays_retryable() throws Exception {
        // port 1 on loopback: nothing listens, the connection is refused at once
        SQLException refused = org.junit.jupiter.api.Assertions.assertThrows(SQLException.class,
                () -> DriverManager.getConnection("jdbc:postgresql://127.0.0.1:1/test?user=postgres").close());
        assertTrue(causes(refused, ConnectException.class), refused.toString());
        assertTrue(SqlErrors.translate("connect", refused).retryable(), refused.toString());
        assertTrue(SqlErrors.translate("op", new SQLTransientConnectionException("pool timeout", refused))
                .retryable());
        for (String state : List.of("57P01", "57P03")) {
            PSQLException e = new PSQLException(new ServerErrorMessage("SFATAL\0VFATAL\0C" + state
                    + "\0Mthe database system is shutting down\0"));
            assertTrue(SqlErrors.translate("op", e).retryable(), state);
        }
    }

    private static boolean causes(Throwable e, Class<? extends Throwable> type) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
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
