package io.pgdurable.spi;

/**
 * A long-polling fetch was refused because the configured maximum of parked waiters is reached. Retryable, and
 * distinct from a database failure: the database is fine, this node is simply saturated with waiting callers.
 */
public final class CapacityExceededException extends ProviderException {
    private static final long serialVersionUID = 1L;

    public CapacityExceededException(String operation, String message) {
        super(operation, message, true, null, null);
    }
}
