package io.pgdurable.durabletask;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The sidecar's door during a graceful stop: once {@link #close()}d, every new call is refused with UNAVAILABLE
 * except the ones that hand back work the sidecar gave out (results and abandons). The gRPC server itself keeps
 * accepting calls until the grace period ends; shutting it down first is what made a worker's result, sent two
 * seconds into the grace period, bounce and the activity run again after a restart.
 *
 * <p>Methods are matched by their bare name so that RPCs of newer protocol revisions (abandons, entity results)
 * pass as soon as the service implements them.
 */
final class StopGate implements ServerInterceptor {
    static final Set<String> RETURNS_WORK = Set.of(
            "CompleteActivityTask", "CompleteOrchestratorTask", "CompleteEntityTask",
            "AbandonTaskActivityWorkItem", "AbandonTaskOrchestratorWorkItem", "AbandonTaskEntityWorkItem");

    private final CountDownLatch stopping = new CountDownLatch(1);

    /** From now on only results and abandons get in. */
    void close() {
        stopping.countDown();
    }

    boolean stopping() {
        return stopping.getCount() == 0;
    }

    /** Whether a stop began within {@code timeout}. */
    boolean awaitStopping(Duration timeout) throws InterruptedException {
        return stopping.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                      ServerCallHandler<Q, R> next) {
        if (stopping() && !RETURNS_WORK.contains(call.getMethodDescriptor().getBareMethodName())) {
            call.close(Status.UNAVAILABLE.withDescription("the sidecar is stopping: it only takes back results of "
                    + "work it handed out; retry against a running sidecar"), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        return next.startCall(call, headers);
    }
}
