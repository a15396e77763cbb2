package io.pgdurable.spi;

import java.util.Objects;
import java.util.Optional;

/**
 * The one error type of the SPI. Every failure says which operation failed and whether repeating the same call
 * can succeed ({@link #retryable()}): busy or unreachable database, deadlock, pool timeout are retryable; an invalid
 * or expired lock token, a duplicate event id, bad input and corrupt data are permanent.
 *
 * <p>Lock rule: a fetch that throws holds no lock.
 */
public class ProviderException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String operation;
    private final boolean retryable;
    private final String sqlState;

    public ProviderException(String operation, String message, boolean retryable, String sqlState, Throwable cause) {
        super(operation + ": " + message, cause);
        this.operation = Objects.requireNonNull(operation, "operation");
        this.retryable = retryable;
        this.sqlState = sqlState;
    }

    public static ProviderException retryable(String operation, String message) {
        return new ProviderException(operation, message, true, null, null);
    }

    public static ProviderException permanent(String operation, String message) {
        return new ProviderException(operation, message, false, null, null);
    }

    /** The SPI operation that failed, e.g. {@code ackOrchestrationItem}. */
    public String operation() {
        return operation;
    }

    /** True when the same call may succeed later (transient database or pool trouble). */
    public boolean retryable() {
        return retryable;
    }

    /** PostgreSQL SQLSTATE of the underlying database error, when there was one. */
    public Optional<String> sqlState() {
        return Optional.ofNullable(sqlState);
    }
}
