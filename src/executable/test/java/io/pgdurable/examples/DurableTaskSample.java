package io.pgdurable.examples;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationFactory;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * The Durable Task for Java sample of docs/durabletask.md: an unmodified durabletask-client 1.5.0 application
 * pointed at {@code pgdurable serve}. Run the sidecar, then this class ({@code main} takes the port, default 4001).
 * {@link DurableTaskSampleTest} runs it against a sidecar on a test database and checks the docs show it verbatim.
 */
public final class DurableTaskSample {
    private DurableTaskSample() {}

    public static void main(String[] args) throws TimeoutException {
        System.out.println(run(args.length > 0 ? Integer.parseInt(args[0]) : 4001));
    }

    /** Starts a worker and a client on the sidecar at {@code port}, runs one orchestration, returns its outcome. */
    public static String run(int port) throws TimeoutException {
        // docs:durabletask-sample:begin
        DurableTaskGrpcWorker worker = new DurableTaskGrpcWorkerBuilder()
                .port(port) // where `pgdurable serve` listens
                .addOrchestration(new TaskOrchestrationFactory() {
                    @Override
                    public String getName() {
                        return "Greet";
                    }

                    @Override
                    public TaskOrchestration create() {
                        return ctx -> {
                            String greeting = ctx.callActivity("SayHello", ctx.getInput(String.class), String.class)
                                    .await();
                            ctx.createTimer(Duration.ofSeconds(1)).await(); // a durable timer, kept in PostgreSQL
                            ctx.complete(greeting + " (one durable second later)");
                        };
                    }
                })
                .addActivity(new TaskActivityFactory() {
                    @Override
                    public String getName() {
                        return "SayHello";
                    }

                    @Override
                    public TaskActivity create() {
                        return ctx -> "Hello, " + ctx.getInput(String.class) + "!";
                    }
                })
                .build();
        // The 1.5.0 worker's start() runs on a non-daemon thread that never ends; a daemon thread lets the JVM exit.
        Thread workerThread = new Thread(worker::startAndBlock, "durable-task-worker");
        workerThread.setDaemon(true);
        workerThread.start();

        try (DurableTaskClient client = new DurableTaskGrpcClientBuilder().port(port).build()) {
            String id = client.scheduleNewOrchestrationInstance("Greet", "pgdurable");
            OrchestrationMetadata done = client.waitForInstanceCompletion(id, Duration.ofSeconds(30), true);
            return done.getRuntimeStatus() + ": " + done.readOutputAs(String.class);
        } finally {
            worker.stop();
            workerThread.interrupt();
        }
        // docs:durabletask-sample:end
    }
}
