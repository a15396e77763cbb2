package io.pgdurable.spi;

/**
 * The outcome of one ack of {@link OrchestrationProvider#ackWorkItems}, in input order: acked, or the error that
 * {@link OrchestrationProvider#ackWorkItem} would have thrown for this item alone (say, an expired lease).
 *
 * @param error null when the item was acked
 */
public record AckResult(String lockToken, ProviderException error) {
    public static AckResult acked(String lockToken) {
        return new AckResult(lockToken, null);
    }

    public boolean isAcked() {
        return error == null;
    }
}
