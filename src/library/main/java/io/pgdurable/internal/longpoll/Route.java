package io.pgdurable.internal.longpoll;

import io.pgdurable.spi.TagFilter;

/** Which hints a parked fetch can use: all of its queue, or (worker queue) those its tag and session filter match. */
public interface Route {
    Route ORCHESTRATOR = hint -> true;

    boolean accepts(Hint hint);

    /** A worker fetch with this tag filter; {@code sessionCapable} when it passes a session configuration. */
    static Route worker(TagFilter filter, boolean sessionCapable) {
        return hint -> {
            if (!sessionCapable && hint.hops() == 0 && hint.count() == 1 && hint.sessions() && hint.tags() != null) {
                // The one item the payload announces is session-bound: only a fetch with a session configuration can
                // claim it. Taking the wake anyway would spend it, and its single pass-on, on fetches that cannot
                // use it while a session-capable fetch starves. (Passed-on and chained hints have count 1 for "wake
                // one", not "one item": hops > 0, not judged here.)
                return false;
            }
            if (hint.tags() == null) {
                return !(filter instanceof TagFilter.None); // unknown tags: any filter might match
            }
            boolean tagMatch = (hint.untagged() && filter.matches(null))
                    || hint.tags().stream().anyMatch(filter::matches);
            // Session items are only claimable with a session configuration, but a hint mixing both kinds may
            // still hold plain items; the fetch decides, and an unusable wake is passed on.
            return tagMatch || (hint.sessions() && sessionCapable && hint.count() == 0);
        };
    }
}
