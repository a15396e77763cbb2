package io.pgdurable.spi;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A runtime version pin, major.minor.patch; each part in 0..999 so versions compare as packed integers. */
public record SemVer(int major, int minor, int patch) implements Comparable<SemVer> {
    private static final Pattern FORMAT = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");

    public SemVer {
        check("major", major);
        check("minor", minor);
        check("patch", patch);
    }

    private static void check(String part, int value) {
        if (value < 0 || value > 999) {
            throw new IllegalArgumentException("SemVer " + part + " must be in 0..999, was " + value);
        }
    }

    public static SemVer parse(String text) {
        Matcher m = FORMAT.matcher(text == null ? "" : text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("not a major.minor.patch version (each part 0..999): '" + text + "'");
        }
        return new SemVer(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)));
    }

    /** major·1 000 000 + minor·1 000 + patch: the order-preserving form stored in the database. */
    public long packed() {
        return major * 1_000_000L + minor * 1_000L + patch;
    }

    @Override
    public int compareTo(SemVer other) {
        return Long.compare(packed(), other.packed());
    }

    @Override
    public String toString() {
        return major + "." + minor + "." + patch;
    }
}
