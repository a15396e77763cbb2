package io.pgdurable.durabletask;

import com.google.protobuf.Timestamp;
import io.grpc.Status;
import io.grpc.StatusException;

/**
 * The checks of single request fields: instance ids, names, timestamps, completion tokens. Each failure is
 * INVALID_ARGUMENT naming the field and what is wrong with it; a value quoted back is cut short, so that an oversized
 * request does not come back in its own error.
 */
final class FieldRules {
    /** Longest part of a value quoted in an error. */
    private static final int QUOTED = 64;
    /** protobuf's Timestamp range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
    private static final long MIN_SECONDS = -62_135_596_800L;
    private static final long MAX_SECONDS = 253_402_300_799L;

    private final RequestLimits limits;

    FieldRules(RequestLimits limits) {
        this.limits = limits;
    }

    RequestLimits limits() {
        return limits;
    }

    /** An instance id that must be given. */
    void requireId(String field, String id) throws StatusException {
        if (id.isEmpty()) {
            throw invalid(field + " is required");
        }
        optionalId(field, id);
    }

    /** An instance id that may be empty (the sidecar picks one, or it only narrows a listing). */
    void optionalId(String field, String id) throws StatusException {
        bounded(field, id, limits.maxIdLength(), "maxIdLength");
    }

    void requireName(String field, String name) throws StatusException {
        if (name.isEmpty()) {
            throw invalid(field + " is required");
        }
        optionalName(field, name);
    }

    void optionalName(String field, String name) throws StatusException {
        bounded(field, name, limits.maxNameLength(), "maxNameLength");
    }

    /** A timestamp within protobuf's range (beyond it, instants and epoch milliseconds overflow). */
    static void timestamp(String field, Timestamp ts) throws StatusException {
        if (ts.getSeconds() < MIN_SECONDS || ts.getSeconds() > MAX_SECONDS || ts.getNanos() < 0
                || ts.getNanos() > 999_999_999) {
            throw invalid(field + " (seconds " + ts.getSeconds() + ", nanos " + ts.getNanos() + ") is not a "
                    + "timestamp between the years 1 and 9999");
        }
    }

    /**
     * A completion token as the sidecar hands them out ({@code <stream>-<n>}, {@code entity-<stream>-<n>}). One of
     * that form that is no longer (or never was) held is a late result, not an error: see {@link WorkResults}.
     */
    static void requireToken(String field, String token) throws StatusException {
        if (token.isEmpty()) {
            throw invalid(field + " is required (the completionToken of the work item)");
        }
        if (!token.matches("(entity-)?[0-9]{1,19}-[0-9]{1,19}")) {
            throw invalid(field + " '" + quoted(token) + "' is not a completion token this sidecar hands out");
        }
    }

    /** A token given by a worker that may send none (Durable Task for Java 1.5.0). */
    static void optionalToken(String field, String token) throws StatusException {
        if (!token.isEmpty()) {
            requireToken(field, token);
        }
    }

    /** A value stored as PostgreSQL text as it is (a custom status): any length, but no U+0000. */
    void storable(String field, String value) throws StatusException {
        bounded(field, value, Integer.MAX_VALUE, null);
    }

    private static void bounded(String field, String value, int max, String setting) throws StatusException {
        if (value.length() > max) {
            throw invalid(field + " '" + quoted(value) + "' is " + value.length() + " characters long; at most "
                    + max + " are allowed (sidecar setting " + setting + ")");
        }
        if (value.indexOf('\0') >= 0) {
            throw invalid(field + " '" + quoted(value) + "' contains the character U+0000, which PostgreSQL text "
                    + "cannot store");
        }
    }

    static String quoted(String value) {
        String shown = value.length() <= QUOTED ? value : value.substring(0, QUOTED) + "...";
        return shown.replace("\0", "\\0");
    }

    static StatusException invalid(String description) {
        return Status.INVALID_ARGUMENT.withDescription(description).asException();
    }
}
