package io.pgdurable.durabletask;

/**
 * How much one request to the sidecar may carry. A request beyond a limit is refused before anything is stored:
 * RESOURCE_EXHAUSTED for a message or a count over its limit, INVALID_ARGUMENT for an id or a name that is too long
 * (see docs/operations.md, "Hostile or broken requests to the sidecar").
 *
 * @param maxMessageBytes   the largest request message in bytes (gRPC's inbound limit); default 16 MiB, enough for
 *                          the largest payloads the SDKs send in one call
 * @param maxIdLength       the longest instance id in characters (also of a sub-orchestration or an event's
 *                          target); default 1024
 * @param maxNameLength     the longest orchestration, activity, event or operation name in characters; default 1024
 * @param maxActionsPerTurn the most actions one orchestrator response may carry; default 100 000, far beyond any
 *                          fan-out the SDKs send in one turn, small enough that one turn's ack stays one transaction
 *                          of bounded size
 * @param maxWorkerStreams  the most {@code GetWorkItems} streams open at a time (each has two fetch threads); default
 *                          128
 */
public record RequestLimits(int maxMessageBytes, int maxIdLength, int maxNameLength, int maxActionsPerTurn,
                            int maxWorkerStreams) {
    /** The limits a sidecar has unless told otherwise. */
    public static final RequestLimits DEFAULTS = new RequestLimits(16 * 1024 * 1024, 1024, 1024, 100_000, 128);

    public RequestLimits {
        atLeast(maxMessageBytes, 1024, "maxMessageBytes");
        atLeast(maxIdLength, 1, "maxIdLength");
        atLeast(maxNameLength, 1, "maxNameLength");
        atLeast(maxActionsPerTurn, 1, "maxActionsPerTurn");
        atLeast(maxWorkerStreams, 1, "maxWorkerStreams");
    }

    public RequestLimits withMaxMessageBytes(int bytes) {
        return new RequestLimits(bytes, maxIdLength, maxNameLength, maxActionsPerTurn, maxWorkerStreams);
    }

    public RequestLimits withMaxIdLength(int chars) {
        return new RequestLimits(maxMessageBytes, chars, maxNameLength, maxActionsPerTurn, maxWorkerStreams);
    }

    public RequestLimits withMaxNameLength(int chars) {
        return new RequestLimits(maxMessageBytes, maxIdLength, chars, maxActionsPerTurn, maxWorkerStreams);
    }

    public RequestLimits withMaxActionsPerTurn(int actions) {
        return new RequestLimits(maxMessageBytes, maxIdLength, maxNameLength, actions, maxWorkerStreams);
    }

    public RequestLimits withMaxWorkerStreams(int streams) {
        return new RequestLimits(maxMessageBytes, maxIdLength, maxNameLength, maxActionsPerTurn, streams);
    }

    private static void atLeast(int value, int min, String name) {
        if (value < min) {
            throw new IllegalArgumentException(name + " must be at least " + min + ", was " + value);
        }
    }
}
