package io.pgdurable.spi;

import java.util.List;

/**
 * The versions an orchestration dispatcher can replay. Only the first range is applied (the contract's phase-1
 * rule); an empty list means the dispatcher supports nothing and every fetch returns empty.
 */
public record DispatcherCapabilityFilter(List<SemverRange> supportedVersions) {
    public DispatcherCapabilityFilter {
        supportedVersions = List.copyOf(supportedVersions);
    }

    public static DispatcherCapabilityFilter of(SemverRange... ranges) {
        return new DispatcherCapabilityFilter(List.of(ranges));
    }
}
