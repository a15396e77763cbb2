package io.pgdurable.durabletask;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import io.pgdurable.spi.Json;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The one storage form of Durable Task data in the provider: a JSON object {@code {"pb": "<base64 protobuf>"}},
 * optionally with a few routing fields of the sidecar's own beside it. History events need a JSON object
 * ({@code Event.data}); work-item payloads are free text, but using one form for both keeps every stored value
 * self-describing and decodable the same way.
 */
final class DtPayload {
    static final String PROTOBUF = "pb";

    private DtPayload() {}

    static String wrap(MessageLite message) {
        return wrap(message, Map.of());
    }

    /** {@code extra} values must be JSON-writable (strings, numbers, booleans). */
    static String wrap(MessageLite message, Map<String, Object> extra) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put(PROTOBUF, Base64.getEncoder().encodeToString(message.toByteArray()));
        json.putAll(extra);
        return Json.write(json);
    }

    /** True when {@code json} is a value this class wrote (other runtimes' events in a shared history are not). */
    static boolean isWrapped(String json) {
        try {
            return Json.parseObject(json).get(PROTOBUF) instanceof String;
        } catch (IllegalArgumentException notJson) {
            return false;
        }
    }

    static <T> T unwrap(String json, Parser<T> parser) {
        Object pb = fields(json).get(PROTOBUF);
        if (!(pb instanceof String s)) {
            throw new IllegalArgumentException("not a Durable Task payload: no \"" + PROTOBUF + "\" field");
        }
        try {
            return parser.parseFrom(Base64.getDecoder().decode(s));
        } catch (InvalidProtocolBufferException | IllegalArgumentException e) {
            throw new IllegalArgumentException("corrupt Durable Task payload: " + e.getMessage(), e);
        }
    }

    /** A numeric side field, or {@code fallback} when absent. */
    static long longField(String json, String name, long fallback) {
        Object v = fields(json).get(name);
        return v instanceof Number n ? n.longValue() : fallback;
    }

    static boolean booleanField(String json, String name) {
        return Boolean.TRUE.equals(fields(json).get(name));
    }

    private static Map<String, Object> fields(String json) {
        try {
            return Json.parseObject(json);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a Durable Task payload: " + e.getMessage(), e);
        }
    }
}
