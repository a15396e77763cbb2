package io.pgdurable.spi;

/** An inclusive version range a dispatcher can execute. */
public record SemverRange(SemVer min, SemVer max) {
    public SemverRange {
        Fields.present(min, "SemverRange", "min");
        Fields.present(max, "SemverRange", "max");
        if (min.compareTo(max) > 0) {
            throw new IllegalArgumentException("SemverRange min " + min + " is above max " + max);
        }
    }

    public boolean contains(SemVer v) {
        return min.compareTo(v) <= 0 && v.compareTo(max) <= 0;
    }
}
