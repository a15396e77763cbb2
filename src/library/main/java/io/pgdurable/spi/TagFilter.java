package io.pgdurable.spi;

import java.util.Set;
import java.util.TreeSet;

/**
 * Which activity tags a worker accepts. {@code DefaultOnly} takes untagged items (the runtime default),
 * {@code Tags} only the listed tags, {@code DefaultAnd} untagged plus the listed tags, {@code Any} everything and
 * {@code None} nothing. Tag sets hold 1..{@value #MAX_TAGS} tags.
 */
public sealed interface TagFilter {
    int MAX_TAGS = 5;

    record DefaultOnly() implements TagFilter {}

    record Tags(Set<String> tags) implements TagFilter {
        public Tags {
            tags = checked(tags);
        }
    }

    record DefaultAnd(Set<String> tags) implements TagFilter {
        public DefaultAnd {
            tags = checked(tags);
        }
    }

    record Any() implements TagFilter {}

    record None() implements TagFilter {}

    static TagFilter defaultOnly() {
        return new DefaultOnly();
    }

    static TagFilter tags(String... tags) {
        return new Tags(setOf(tags));
    }

    static TagFilter defaultAnd(String... tags) {
        return new DefaultAnd(setOf(tags));
    }

    static TagFilter any() {
        return new Any();
    }

    static TagFilter none() {
        return new None();
    }

    /** True when an item carrying {@code tag} (null = untagged) passes this filter. */
    default boolean matches(String tag) {
        if (this instanceof DefaultOnly) {
            return tag == null;
        } else if (this instanceof Tags t) {
            return tag != null && t.tags().contains(tag);
        } else if (this instanceof DefaultAnd d) {
            return tag == null || d.tags().contains(tag);
        } else {
            return this instanceof Any;
        }
    }

    /** The tags as a set; null (the array or a tag) is refused by {@link #checked} with the others' rules. */
    private static Set<String> setOf(String[] tags) {
        if (tags == null) {
            return null;
        }
        Set<String> set = new java.util.LinkedHashSet<>();
        for (String t : tags) {
            if (t == null) {
                throw new IllegalArgumentException("TagFilter: a tag must not be null");
            }
            set.add(t);
        }
        return set;
    }

    private static Set<String> checked(Set<String> tags) {
        if (tags == null || tags.isEmpty()) {
            throw new IllegalArgumentException("a tag filter needs at least one tag");
        }
        if (tags.size() > MAX_TAGS) {
            throw new IllegalArgumentException("a tag filter takes at most " + MAX_TAGS + " tags, got " + tags.size());
        }
        for (String t : tags) {
            if (t == null || t.isEmpty()) {
                throw new IllegalArgumentException("tags must be non-empty strings");
            }
        }
        return Set.copyOf(new TreeSet<>(tags));
    }
}
