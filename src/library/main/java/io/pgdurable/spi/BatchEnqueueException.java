package io.pgdurable.spi;

import java.util.List;
import java.util.stream.IntStream;

/**
 * A batched enqueue ({@link OrchestrationProvider#enqueueAllForWorker(List)},
 * {@link OrchestrationProvider#enqueueAllForOrchestrator(List, java.time.Duration)}) stopped part-way. It says exactly
 * what happened to each item of the caller's list, by index:
 *
 * <ul>
 *   <li>{@link #stored()}: committed (their chunks' transactions committed) — do not enqueue them again;</li>
 *   <li>{@link #notStored()}: certainly not stored — safe to enqueue again;</li>
 *   <li>{@link #inDoubt()}: the connection broke while their chunk's statement was in flight, so the commit outcome
 *       is unknown (usually empty).</li>
 * </ul>
 *
 * <p>Chunks are stored in list order and the batch stops at the first chunk that fails, so {@code stored} is a
 * prefix of the list. {@link #retryable()} is that of the failure that stopped the batch (pool exhausted,
 * statement timeout, database unavailable: retryable; invalid input: permanent, with nothing stored).
 */
public final class BatchEnqueueException extends ProviderException {
    private static final long serialVersionUID = 1L;

    private final int size;
    private final int storedCount;
    private final int inDoubtCount;

    /**
     * @param size         items in the caller's list
     * @param storedCount  the first {@code storedCount} items are stored
     * @param inDoubtCount the next {@code inDoubtCount} items may or may not be stored; the rest are not stored
     */
    public BatchEnqueueException(String operation, String message, boolean retryable, String sqlState,
                                 Throwable cause, int size, int storedCount, int inDoubtCount) {
        super(operation, message + " [batch of " + size + ": " + describe(size, storedCount, inDoubtCount) + "]",
                retryable, sqlState, cause);
        if (storedCount < 0 || inDoubtCount < 0 || storedCount + inDoubtCount > size) {
            throw new IllegalArgumentException("inconsistent batch outcome: size " + size + ", stored " + storedCount
                    + ", in doubt " + inDoubtCount);
        }
        this.size = size;
        this.storedCount = storedCount;
        this.inDoubtCount = inDoubtCount;
    }

    private static String describe(int size, int stored, int inDoubt) {
        StringBuilder sb = new StringBuilder();
        sb.append("stored ").append(range(0, stored));
        if (inDoubt > 0) {
            sb.append(", in doubt ").append(range(stored, stored + inDoubt));
        }
        sb.append(", not stored ").append(range(stored + inDoubt, size));
        return sb.toString();
    }

    private static String range(int from, int to) {
        return from >= to ? "none" : to - from == 1 ? "#" + from : "#" + from + "..#" + (to - 1);
    }

    /** Indexes (into the caller's list, ascending) of the items that are stored. */
    public List<Integer> stored() {
        return IntStream.range(0, storedCount).boxed().toList();
    }

    /** Indexes of the items whose commit outcome is unknown (the connection broke mid-statement). */
    public List<Integer> inDoubt() {
        return IntStream.range(storedCount, storedCount + inDoubtCount).boxed().toList();
    }

    /** Indexes of the items that are certainly not stored. */
    public List<Integer> notStored() {
        return IntStream.range(storedCount + inDoubtCount, size).boxed().toList();
    }

    /** How many items, from the start of the list, are stored. */
    public int storedCount() {
        return storedCount;
    }

    /** Items in the batch. */
    public int batchSize() {
        return size;
    }
}
