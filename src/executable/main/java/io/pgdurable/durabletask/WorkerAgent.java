package io.pgdurable.durabletask;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;

/**
 * How many items a worker that declares no concurrency gets at a time. The {@code GetWorkItems} request's
 * {@code maxConcurrent*WorkItems} fields are the worker's own word and win whenever set. Without them the request
 * says nothing: Durable Task for Java 1.5.0 (which runs one item at a time) and the JavaScript SDK 0.4.0 (which runs
 * every item it receives at once) send the same empty request. What tells them apart is the gRPC library in the
 * {@code user-agent} header: {@code grpc-node-js} for the JavaScript SDK, {@code grpc-java} for the Java SDKs.
 */
final class WorkerAgent implements ServerInterceptor {
    private static final Metadata.Key<String> USER_AGENT =
            Metadata.Key.of("user-agent", Metadata.ASCII_STRING_MARSHALLER);
    private static final Context.Key<String> AGENT = Context.key("pgdurable-worker-user-agent");

    /**
     * Items of each kind at a time for a worker that declares none but runs them concurrently: enough for a fan-out
     * to run side by side, few enough that items do not wait long in one worker's inbox while others idle (their
     * leases are renewed meanwhile).
     */
    static final int UNDECLARED_CONCURRENT_SLOTS = 10;

    /** The user-agent of the call being served, or null. */
    static String current() {
        return AGENT.get();
    }

    /** How many items of a kind a worker gets at a time when it declared {@code declared} (0 = nothing). */
    static int slots(int declared, String userAgent) {
        if (declared > 0) {
            return Math.min(declared, WorkDispatcher.MAX_CONCURRENCY);
        }
        return runsItemsConcurrently(userAgent) ? UNDECLARED_CONCURRENT_SLOTS : 1;
    }

    /** Workers known to run every item they are given at once without declaring a limit. */
    static boolean runsItemsConcurrently(String userAgent) {
        return userAgent != null && userAgent.contains("grpc-node-js/");
    }

    /**
     * Whether a purge request's {@code recursive=false} is the caller's choice. Durable Task for Java (1.5.0 and
     * Dapr's) never sets the field, so its false means "not said", and its purges keep the cascade they always had
     * here; the other SDKs set it on every purge (the JavaScript SDK's default is false). proto3 cannot tell an
     * unset bool from false, so the gRPC library in the {@code user-agent} decides, as for concurrency above. A call
     * without a user-agent keeps the cascade too.
     */
    static boolean choosesPurgeRecursion(String userAgent) {
        return userAgent != null && !userAgent.contains("grpc-java");
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                      ServerCallHandler<Q, R> next) {
        String agent = headers.get(USER_AGENT);
        return agent == null ? next.startCall(call, headers)
                : Contexts.interceptCall(Context.current().withValue(AGENT, agent), call, headers, next);
    }
}
