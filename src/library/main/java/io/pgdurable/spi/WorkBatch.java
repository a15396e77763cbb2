package io.pgdurable.spi;

import java.time.Duration;

/**
 * What a batched worker fetch ({@link OrchestrationProvider#fetchWorkItems}) asks for: at most {@code maxItems}
 * items, returned as soon as at least {@code minItems} are claimed or when {@code maxWait} ends, whichever comes
 * first. {@code maxWait} zero makes a single claim attempt that returns whatever it found (possibly fewer than
 * {@code minItems}, possibly nothing).
 *
 * <p>Bounds: {@code 1 <= minItems <= maxItems <= }{@value #MAX_ITEMS}; {@code maxWait} is zero or positive. A
 * violation is an {@link IllegalArgumentException} naming the field.
 */
public record WorkBatch(int maxItems, int minItems, Duration maxWait) {
    /** The hard cap on items per batched fetch. */
    public static final int MAX_ITEMS = 1000;

    public WorkBatch {
        if (maxWait == null) {
            throw new IllegalArgumentException("WorkBatch: field 'maxWait' must not be null (Duration.ZERO for no wait)");
        }
        if (maxItems < 1 || maxItems > MAX_ITEMS) {
            throw new IllegalArgumentException("WorkBatch maxItems must be in 1.." + MAX_ITEMS + ", was " + maxItems);
        }
        if (minItems < 1 || minItems > maxItems) {
            throw new IllegalArgumentException("WorkBatch minItems must be in 1..maxItems (" + maxItems + "), was "
                    + minItems);
        }
        if (maxWait.isNegative()) {
            throw new IllegalArgumentException("WorkBatch maxWait must not be negative, was " + maxWait);
        }
    }

    /** Up to {@code maxItems}, whatever is claimable right now, without waiting. */
    public static WorkBatch upTo(int maxItems) {
        return new WorkBatch(maxItems, 1, Duration.ZERO);
    }

    /** Up to {@code maxItems}, waiting at most {@code maxWait} for the first one. */
    public static WorkBatch upTo(int maxItems, Duration maxWait) {
        return new WorkBatch(maxItems, 1, maxWait);
    }
}
