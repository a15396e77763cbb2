package io.pgdurable.spi;

import java.time.Duration;
import java.util.Objects;

/** Lets a worker fetch session-bound items: {@code ownerId} is the affinity identity, {@code lockTimeout} the session lease. */
public record SessionFetchConfig(String ownerId, Duration lockTimeout) {
    public SessionFetchConfig {
        Objects.requireNonNull(ownerId, "ownerId");
        Objects.requireNonNull(lockTimeout, "lockTimeout");
        if (ownerId.isEmpty()) {
            throw new IllegalArgumentException("SessionFetchConfig ownerId must not be empty");
        }
        if (lockTimeout.isNegative() || lockTimeout.isZero()) {
            throw new IllegalArgumentException("SessionFetchConfig lockTimeout must be positive, was " + lockTimeout);
        }
    }
}
