package io.pgdurable.durabletask;

import io.pgdurable.spi.ProviderAdmin;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * Instance ids in the provider's order, read from storage a chunk at a time ({@link ProviderAdmin#listInstancesAfter}),
 * so that a page of a protocol query costs about the page and paging through a hub reads each id about once.
 */
final class InstanceIds implements Iterable<String> {
    /** Ids read per round trip: one chunk serves a default page of 100 with room for filtered-out ids. */
    static final int CHUNK = 500;

    private final ProviderAdmin admin;
    private final String after;
    private final String prefix;
    private final int chunk;

    private InstanceIds(ProviderAdmin admin, String after, String prefix, int chunk) {
        this.admin = admin;
        this.after = after;
        this.prefix = prefix;
        this.chunk = chunk;
    }

    /** The ids that start with {@code prefix} and come after {@code after} ({@code ""}: from the first). */
    static InstanceIds after(ProviderAdmin admin, String after, String prefix) {
        return after(admin, after, prefix, CHUNK);
    }

    /** As {@link #after(ProviderAdmin, String, String)}, {@code chunk} ids per round trip. */
    static InstanceIds after(ProviderAdmin admin, String after, String prefix, int chunk) {
        return new InstanceIds(admin, after, prefix, chunk);
    }

    @Override
    public Iterator<String> iterator() {
        return new Iterator<>() {
            private List<String> read = List.of();
            private int next;
            private String last = after;
            private boolean exhausted;

            @Override
            public boolean hasNext() {
                if (next < read.size()) {
                    return true;
                }
                if (exhausted) {
                    return false;
                }
                read = admin.listInstancesAfter(last, prefix, chunk);
                next = 0;
                exhausted = read.size() < chunk;
                if (!read.isEmpty()) {
                    last = read.get(read.size() - 1);
                }
                return !read.isEmpty();
            }

            @Override
            public String next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return read.get(next++);
            }
        };
    }
}
