package io.pgdurable.spi;

import java.util.Optional;

/** An instance's custom status ({@code null} when cleared) and its monotonic version. */
public record CustomStatus(String status, long version) {
    public Optional<String> value() {
        return Optional.ofNullable(status);
    }
}
