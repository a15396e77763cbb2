package io.pgdurable.durabletask;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationFactory;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

/**
 * One task hub for a test class: its own schema, a long-polling provider, a sidecar on a free port, a real
 * Durable Task client, and real Durable Task workers started and killed on demand.
 */
final class SidecarHarness implements AutoCloseable {
    final String schema;
    final PostgresProvider provider;
    final SidecarServer sidecar;
    final DurableTaskClient client;
    private final ManagedChannel clientChannel;
    private final List<Worker> workers = new ArrayList<>();

    SidecarHarness(String prefix) {
        this(prefix, TestDatabase.newSchemaName(prefix), UnaryOperator.identity());
    }

    SidecarHarness(String prefix, String schema, UnaryOperator<SidecarConfig> tune) {
        this.schema = schema;
        provider = PostgresProvider.create(TestDatabase.config(schema).poolSize(8).longPolling(true).build());
        SidecarConfig config = tune.apply(SidecarConfig.defaults(schema).withPort(0)
                .withStatusJdbcUrl(TestDatabase.url()).withShutdownGrace(Duration.ofSeconds(1)));
        sidecar = SidecarServer.start(provider, config);
        clientChannel = ManagedChannelBuilder.forAddress("127.0.0.1", sidecar.port()).usePlaintext().build();
        client = new DurableTaskGrpcClientBuilder().grpcChannel(clientChannel).build();
    }

    /** Closes the sidecar on a thread of its own (a graceful stop waits for the workers' results) and times it. */
    GracefulStop stopInBackground() {
        return new GracefulStop(sidecar);
    }

    /** A stop under way on its own thread. */
    static final class GracefulStop {
        private final java.util.concurrent.atomic.AtomicLong millis = new java.util.concurrent.atomic.AtomicLong(-1);
        private final Thread thread;

        private GracefulStop(SidecarServer sidecar) {
            thread = new Thread(() -> {
                long t0 = System.nanoTime();
                sidecar.close();
                millis.set(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            }, "graceful-stop");
            thread.start();
        }

        boolean running() {
            return thread.isAlive();
        }

        /** Waits up to {@code timeout} for the stop to end; its length in ms, or -1 while it still runs. */
        long await(Duration timeout) throws InterruptedException {
            thread.join(Math.max(1, timeout.toMillis()));
            return thread.isAlive() ? -1 : millis.get();
        }
    }

    /** A worker connected to this sidecar (or another port), with orchestrations and activities. */
    Worker startWorker(UnaryOperator<DurableTaskGrpcWorkerBuilder> setup) {
        return startWorker(sidecar.port(), setup);
    }

    Worker startWorker(int port, UnaryOperator<DurableTaskGrpcWorkerBuilder> setup) {
        Worker w = new Worker(port, setup);
        synchronized (workers) {
            workers.add(w);
        }
        return w;
    }

    /** A real worker on its own channel and thread; {@link #kill()} cuts its connection like a crash would. */
    static final class Worker {
        final ManagedChannel channel;
        final Thread thread;

        Worker(int port, UnaryOperator<DurableTaskGrpcWorkerBuilder> setup) {
            channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            DurableTaskGrpcWorker worker = setup.apply(new DurableTaskGrpcWorkerBuilder().grpcChannel(channel))
                    .build();
            thread = new Thread(worker::startAndBlock, "dt-worker-" + port);
            thread.setDaemon(true);
            thread.start();
        }

        void kill() {
            channel.shutdownNow();
            thread.interrupt(); // ends the worker's 5 s reconnect pause
            try {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static TaskOrchestrationFactory orchestration(String name, TaskOrchestration body) {
        return new TaskOrchestrationFactory() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public TaskOrchestration create() {
                return body;
            }
        };
    }

    static TaskActivityFactory activity(String name, TaskActivity body) {
        return new TaskActivityFactory() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public TaskActivity create() {
                return body;
            }
        };
    }

    /** Re-checks observable state until it holds or {@code timeout} passes; returns whether it held. */
    static boolean eventually(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(25);
        }
        return true;
    }

    @Override
    public void close() {
        synchronized (workers) {
            workers.forEach(Worker::kill);
        }
        clientChannel.shutdownNow();
        sidecar.close();
        provider.close();
        TestDatabase.dropSchema(schema);
    }
}
