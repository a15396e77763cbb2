package io.pgdurable.bench;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.Task;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationFactory;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.MethodDescriptor;
import io.pgdurable.durabletask.SidecarConfig;
import io.pgdurable.durabletask.SidecarServer;
import io.pgdurable.spi.OrchestrationProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A Durable Task sidecar on one provider with real Durable Task workers and a real client connected to it over
 * loopback gRPC, all in this process. Kept apart from {@link SidecarScenario} so that the scenario can say clearly
 * that durabletask-client is missing instead of failing to link.
 *
 * <p>Every wait is bounded: the workers must connect within {@link #CONNECT_TIMEOUT}, every client call carries a
 * deadline, and {@link #close()} cuts the channels first so that nothing blocked on the sidecar outlives it.
 */
final class SidecarRig implements AutoCloseable {
    static final String ORCHESTRATION = "BenchFanOut";
    static final String ACTIVITY = "BenchWork";
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(15);
    /** For client calls that set no deadline of their own (scheduling); waiting calls set theirs. */
    static final Duration CALL_DEADLINE = Duration.ofSeconds(30);

    private final SidecarServer sidecar;
    private final int fanout;
    private final List<ManagedChannel> workerChannels = new ArrayList<>();
    private final List<Thread> workerThreads = new ArrayList<>();
    private ManagedChannel clientChannel;
    private DurableTaskClient client;

    private SidecarRig(SidecarServer sidecar, int fanout) {
        this.sidecar = sidecar;
        this.fanout = fanout;
    }

    /**
     * Starts the sidecar on {@code config}'s host (a free port when its port is 0), connects {@code workers} workers
     * and a client, and returns once every worker's stream is open. Throws {@link IllegalStateException} with the
     * reason when the sidecar cannot listen or the workers do not connect in time; whatever was started is closed.
     */
    static SidecarRig start(OrchestrationProvider provider, SidecarConfig config, int workers, int fanout) {
        SidecarServer sidecar;
        try {
            sidecar = SidecarServer.start(provider, config);
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new IllegalStateException("the Durable Task sidecar could not start on " + config.host() + ":"
                    + config.port() + ": " + e.getMessage() + (cause == e ? "" : " (" + cause + ")"), e);
        }
        SidecarRig rig = new SidecarRig(sidecar, fanout);
        try {
            rig.connect(workers);
            return rig;
        } catch (RuntimeException | Error e) {
            rig.close();
            throw e;
        }
    }

    private void connect(int workers) {
        int port = sidecar.port();
        for (int i = 0; i < workers; i++) {
            ManagedChannel ch = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            workerChannels.add(ch);
            DurableTaskGrpcWorker worker = new DurableTaskGrpcWorkerBuilder().grpcChannel(ch)
                    .addOrchestration(orchestration(fanout)).addActivity(activity()).build();
            Thread t = new Thread(worker::startAndBlock, "bench-dt-worker-" + i);
            t.setDaemon(true);
            workerThreads.add(t);
            t.start();
        }
        clientChannel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext()
                .intercept(new DefaultDeadline(CALL_DEADLINE)).build();
        client = new DurableTaskGrpcClientBuilder().grpcChannel(clientChannel).build();
        // Stream opening has no completion signal to wait on, so its count is watched instead.
        if (!Pause.until(() -> sidecar.openWorkerStreams() >= workers, CONNECT_TIMEOUT.toMillis())) {
            throw new IllegalStateException("only " + sidecar.openWorkerStreams() + " of " + workers
                    + " Durable Task workers connected to the sidecar on 127.0.0.1:" + port + " within "
                    + CONNECT_TIMEOUT.toSeconds() + " s");
        }
    }

    int port() {
        return sidecar.port();
    }

    /** The sum of the activities' results of one orchestration: activity {@code i} returns {@code i + 1}. */
    int expectedOutput() {
        return fanout * (fanout + 1) / 2;
    }

    /**
     * Schedules one orchestration and waits until the client sees it completed; throws when it does not complete
     * within {@code timeout}, ends in another state, or ({@code checkOutput}) returns a wrong result.
     */
    void runOne(Duration timeout, boolean checkOutput) throws TimeoutException {
        String id = client.scheduleNewOrchestrationInstance(ORCHESTRATION);
        OrchestrationMetadata m;
        try {
            m = client.waitForInstanceCompletion(id, timeout, checkOutput);
        } catch (TimeoutException e) {
            TimeoutException t = new TimeoutException("orchestration " + id + " did not complete within "
                    + timeout.toSeconds() + " s through the sidecar");
            t.initCause(e);
            throw t;
        }
        if (m == null || !m.isInstanceFound()) {
            throw new IllegalStateException("orchestration " + id + " is unknown to the sidecar after scheduling");
        }
        if (m.getRuntimeStatus() != OrchestrationRuntimeStatus.COMPLETED) {
            throw new IllegalStateException("orchestration " + id + " ended " + m.getRuntimeStatus()
                    + (m.getFailureDetails() == null ? "" : ": " + m.getFailureDetails().getErrorMessage()));
        }
        if (checkOutput) {
            Integer out = m.readOutputAs(Integer.class);
            if (out == null || out != expectedOutput()) {
                throw new IllegalStateException("orchestration " + id + " returned " + out + ", expected "
                        + expectedOutput());
            }
        }
    }

    private static TaskOrchestrationFactory orchestration(int fanout) {
        TaskOrchestration body = ctx -> {
            List<Task<Integer>> parts = new ArrayList<>(fanout);
            for (int i = 0; i < fanout; i++) {
                parts.add(ctx.callActivity(ACTIVITY, i, Integer.class));
            }
            int sum = 0;
            for (int v : ctx.allOf(parts).await()) {
                sum += v;
            }
            ctx.complete(sum);
        };
        return new TaskOrchestrationFactory() {
            @Override
            public String getName() {
                return ORCHESTRATION;
            }

            @Override
            public TaskOrchestration create() {
                return body;
            }
        };
    }

    private static TaskActivityFactory activity() {
        TaskActivity body = ctx -> ctx.getInput(Integer.class) + 1;
        return new TaskActivityFactory() {
            @Override
            public String getName() {
                return ACTIVITY;
            }

            @Override
            public TaskActivity create() {
                return body;
            }
        };
    }

    /**
     * Ends the client's calls and the workers' streams at once (the sidecar then abandons what they held), stops the
     * sidecar and waits a bounded time for the worker threads. The provider stays open: it is the caller's.
     */
    @Override
    public void close() {
        if (clientChannel != null) {
            clientChannel.shutdownNow();
        }
        workerChannels.forEach(ManagedChannel::shutdownNow);
        // The 1.5.0 worker pauses 5 s before reconnecting after its stream ends; an interrupt ends that loop.
        workerThreads.forEach(Thread::interrupt);
        sidecar.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        try {
            for (ManagedChannel ch : workerChannels) {
                ch.awaitTermination(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
            if (clientChannel != null) {
                clientChannel.awaitTermination(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
            for (Thread t : workerThreads) {
                t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Gives every call without a deadline of its own one, so a stalled sidecar cannot block a caller for good. */
    private static final class DefaultDeadline implements ClientInterceptor {
        private final Duration deadline;

        DefaultDeadline(Duration deadline) {
            this.deadline = deadline;
        }

        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
                                                     Channel next) {
            return next.newCall(method, options.getDeadline() != null ? options
                    : options.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS));
        }
    }
}
