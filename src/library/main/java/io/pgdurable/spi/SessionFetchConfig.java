package io.pgdurable.spi;

import java.time.Duration;

/** Lets a worker fetch session-bound items: {@code ownerId} is the affinity identity, {@code lockTimeout} the session lease. */
public record SessionFetchConfig(String ownerId, Duration lockTimeout) {
    public SessionFetchConfig {
        Fields.present(ownerId, "SessionFetchConfig", "ownerId");
        Fields.present(lockTimeout, "SessionFetchConfig", "lockTimeout");
        if (ownerId.isEmpty()) {
            throw new IllegalArgumentException("SessionFetchConfig ownerId must not be empty");
        }
        if (lockTimeout.isNegative() || lockTimeout.isZero()) {
            throw new IllegalArgumentException("SessionFetchConfig lockTimeout must be positive, was " + lockTimeout);
        }
    }
}
