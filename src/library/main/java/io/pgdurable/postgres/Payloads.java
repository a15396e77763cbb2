package io.pgdurable.postgres;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/** Input checks shared by the operations: each failure is a permanent error naming the operation and the field. */
final class Payloads {
    private final int maxBytes;

    Payloads(int maxBytes) {
        this.maxBytes = maxBytes;
    }

    /** Fails unless {@code text} fits the configured payload limit (null passes). */
    void checkSize(String op, String what, String text) {
        if (text == null || text.length() <= maxBytes / 3) {
            return; // cannot exceed the limit even at 3 bytes per char
        }
        int bytes = text.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > maxBytes) {
            throw ProviderException.permanent(op, what + " is " + bytes + " bytes, above the configured limit of "
                    + maxBytes + " bytes (maxPayloadBytes)");
        }
    }

    String encode(String op, String what, WorkItem item) {
        if (item == null) {
            throw ProviderException.permanent(op, what + " is null");
        }
        String json = item.toJson();
        checkSize(op, what + " (" + item.kind() + ")", json);
        return json;
    }

    /** Validates an event for storage and returns its JSON object (parsed only to prove it is one). */
    Map<String, Object> checkEvent(String op, int index, Event e) {
        if (e == null) {
            throw ProviderException.permanent(op, "event #" + index + " is null");
        }
        if (e.eventId() < 1) {
            throw ProviderException.permanent(op, "event #" + index + " (" + e.type() + ") has event id "
                    + e.eventId() + "; event ids start at 1");
        }
        if (e.type().isEmpty()) {
            throw ProviderException.permanent(op, "event " + e.eventId() + " has an empty type");
        }
        checkSize(op, "event " + e.eventId() + " (" + e.type() + ")", e.data());
        try {
            return Json.parseObject(e.data());
        } catch (IllegalArgumentException bad) {
            throw ProviderException.permanent(op, "event " + e.eventId() + " (" + e.type()
                    + ") data is not a JSON object: " + bad.getMessage());
        }
    }

    static long positiveMillis(String op, String what, Duration d) {
        if (d == null) {
            throw ProviderException.permanent(op, what + " is null");
        }
        long ms = d.toMillis();
        if (ms <= 0) {
            throw ProviderException.permanent(op, what + " must be at least 1 ms, was " + d);
        }
        return ms;
    }

    /** A delay that may be absent: null or zero means none; negative is refused. */
    static long delayMillis(String op, Duration d) {
        if (d == null) {
            return 0;
        }
        if (d.isNegative()) {
            throw ProviderException.permanent(op, "delay must not be negative, was " + d);
        }
        return d.toMillis();
    }

    /** The UTF-8 encoded length of {@code text}, counted without encoding it. */
    static int utf8Length(String text) {
        int n = text.length();
        int bytes = n;
        for (int i = 0; i < n; i++) {
            char ch = text.charAt(i);
            if (ch >= 0x80) {
                if (ch < 0x800) {
                    bytes += 1;
                } else if (Character.isHighSurrogate(ch) && i + 1 < n && Character.isLowSurrogate(text.charAt(i + 1))) {
                    bytes += 2; // a pair: 4 bytes for 2 chars
                    i++;
                } else {
                    bytes += 2;
                }
            }
        }
        return bytes;
    }

    static void notNull(String op, String what, Object value) {
        if (value == null) {
            throw ProviderException.permanent(op, what + " is null");
        }
    }
}
