package io.pgdurable.internal.longpoll;

import java.util.List;

/**
 * The database side of long polling, implemented by the provider (which owns every SQL statement): read-only
 * questions about what is claimable now and when more becomes claimable.
 */
public interface WorkScanner {

    /** One cheap statement: hints for what is claimable at {@code nowMs} (empty when nothing is). */
    List<Hint> probe(long nowMs);

    /**
     * A timer scan in a READ ONLY transaction with server-side lock and statement timeouts: what is claimable now
     * plus the earliest future visibility and lease-end times (at most {@code limit} of each kind).
     *
     * @return the hints, or null when the server cancelled the scan (it rolled back and its connection returned)
     */
    List<Hint> scan(long nowMs, int limit);
}
