package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.net.UnknownHostException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * Classifies database failures as retryable or permanent. The rule of thumb: the database or the network being
 * busy, gone or in the way is retryable; anything about the request itself is permanent, and so is a connection
 * that is configured wrong (a refused login, a missing database, a host name that does not resolve).
 */
final class SqlErrors {
    /** A stored function was replaced while a cached plan referenced it; re-running the call succeeds. */
    static final String CACHED_PLAN_CHANGED = "0A000";

    private SqlErrors() {}

    static ProviderException translate(String operation, SQLException e) {
        String state = e.getSQLState();
        String message = serverMessage(e);
        boolean retryable = isRetryable(e, state);
        String text = describe(state, message, e);
        return new ProviderException(operation, text, retryable, state, e);
    }

    static boolean isRetryable(SQLException e, String state) {
        if (refusedForGood(e)) {
            return false;
        }
        if (e instanceof SQLTransientConnectionException) {
            // The pool could not hand out a connection in time: the database or the network is slow or away.
            return true;
        }
        if (state == null) {
            return false;
        }
        if (state.startsWith("08")      // connection exceptions
                || state.startsWith("53") // insufficient resources: too many connections, out of memory
                || state.startsWith("57P") // admin/crash shutdown, cannot connect now
                || state.equals("57014")  // statement timeout / cancel
                || state.equals("40P01")  // deadlock
                || state.equals("40001")  // serialization failure: re-running the transaction is the cure
                || state.equals("55P03")  // lock not available (lock_timeout)
                || state.equals(CACHED_PLAN_CHANGED)) {
            return true;
        }
        return false;
    }

    /**
     * Whether {@code e} or anything it wraps says the connection can never be made as configured, whatever the
     * outer state: the server refused this login (28xxx: wrong password, no pg_hba.conf entry) or has no such
     * database (3D000), or the host name does not resolve. A driver, pool or listener reports these inside a
     * connection failure (08xxx) or a pool timeout, which alone would read as retryable.
     */
    static boolean refusedForGood(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLException s && s.getSQLState() != null
                    && (s.getSQLState().startsWith("28") || s.getSQLState().startsWith("3D"))) {
                return true;
            }
            if (c instanceof UnknownHostException u && !temporaryResolverFailure(u)) {
                return true;
            }
        }
        return false;
    }

    /**
     * A name server that did not answer (EAI_AGAIN, "Temporary failure in name resolution") is the network being
     * away, not a wrong name: the same name may resolve a moment later.
     */
    private static boolean temporaryResolverFailure(UnknownHostException e) {
        return e.getMessage() != null && e.getMessage().contains("Temporary failure");
    }

    /**
     * Why a connection could not be opened: the driver's message, plus the network cause (refused, unknown host,
     * timed out) when the driver's own text does not already say it.
     */
    static String connectFailure(Throwable failure) {
        String text = failure.getMessage() != null ? failure.getMessage() : failure.getClass().getSimpleName();
        Throwable cause = failure.getCause();
        if (cause != null && !(cause instanceof SQLException) && cause.getMessage() != null
                && !text.contains(cause.getMessage())) {
            text += " (" + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")";
        }
        return text;
    }

    private static String describe(String state, String message, SQLException e) {
        if (state == null) {
            return message;
        }
        if (state.startsWith("PD")) {
            return message; // our own functions' errors already say what was wrong
        }
        if (state.equals("23505") && e instanceof PSQLException p && p.getServerErrorMessage() != null
                && "history_pkey".equals(p.getServerErrorMessage().getConstraint())) {
            return "duplicate event id: " + detail(p.getServerErrorMessage()) + " [SQLSTATE 23505]";
        }
        if ((state.equals("42P05") || state.equals("26000") || state.equals("08P01"))
                && message.contains("prepared statement \"S_")) {
            // pgjdbc names its server-side statements S_1, S_2...: one that already exists, has vanished or takes
            // other parameters in this connection's session means the session changed between transactions.
            return message + " [SQLSTATE " + state + "] (the pool's connections seem to go through a "
                    + "transaction-pooling proxy such as PgBouncer in transaction mode: set transactionPooler(true) "
                    + "and directUrl, see docs/pgbouncer.md)";
        }
        if (state.equals("42883") || state.equals("42P01") || state.equals("3F000")) {
            return message + " [SQLSTATE " + state + "] (is the schema migrated to this library's version?)";
        }
        return message + " [SQLSTATE " + state + "]";
    }

    private static String detail(ServerErrorMessage m) {
        return m.getDetail() != null ? m.getDetail() : m.getMessage();
    }

    private static String serverMessage(SQLException e) {
        if (e instanceof PSQLException p && p.getServerErrorMessage() != null
                && p.getServerErrorMessage().getMessage() != null) {
            return p.getServerErrorMessage().getMessage();
        }
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }
}
