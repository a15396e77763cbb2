package io.pgdurable.spi;

/**
 * Argument checks for the SPI's value types. A missing field is the caller's mistake, so it is an
 * {@link IllegalArgumentException} that names the type and the field, never a bare {@link NullPointerException}
 * from deep inside the provider.
 */
final class Fields {
    private Fields() {}

    static <T> T present(T value, String type, String field) {
        if (value == null) {
            throw new IllegalArgumentException(type + ": field '" + field + "' must not be null");
        }
        return value;
    }

    static String nonEmpty(String value, String type, String field) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException(type + ": field '" + field + "' must be a non-empty string");
        }
        return value;
    }

    static <C extends java.util.Collection<?>> C noNulls(C values, String type, String field) {
        for (Object v : values) {
            if (v == null) {
                throw new IllegalArgumentException(type + ": field '" + field + "' must not hold null elements");
            }
        }
        return values;
    }
}
