package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.pgdurable.durabletask.protocol.OrchestratorService.GetWorkItemsRequest;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc;
import io.pgdurable.durabletask.protocol.TaskHubSidecarServiceGrpc.TaskHubSidecarServiceBlockingStub;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The connection of a worker written by hand against the protocol classes: calls with a deadline, and one
 * {@code GetWorkItems} stream whose items queue up for the test to take.
 */
final class RawStream implements AutoCloseable {
    static final Duration WAIT = Duration.ofSeconds(30);

    private final ManagedChannel channel;
    private final TaskHubSidecarServiceBlockingStub stub;
    private final BlockingQueue<WorkItem> items = new LinkedBlockingQueue<>();

    RawStream(int port, GetWorkItemsRequest request) {
        channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        stub = TaskHubSidecarServiceGrpc.newBlockingStub(channel);
        TaskHubSidecarServiceGrpc.newStub(channel).getWorkItems(request, new StreamObserver<>() {
            @Override
            public void onNext(WorkItem item) {
                items.add(item);
            }

            @Override
            public void onError(Throwable t) {
                // the channel closes at the end of the test
            }

            @Override
            public void onCompleted() {
            }
        });
    }

    /** A stub whose calls end within {@link #WAIT}. */
    TaskHubSidecarServiceBlockingStub timed() {
        return stub.withDeadlineAfter(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The next item on the stream; fails the test when none comes within {@link #WAIT}. */
    WorkItem next() throws InterruptedException {
        WorkItem item = poll(WAIT);
        assertNotNull(item, "no work item within " + WAIT);
        return item;
    }

    /** The next item on the stream, or null when none comes within {@code timeout}. */
    WorkItem poll(Duration timeout) throws InterruptedException {
        return items.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
}
