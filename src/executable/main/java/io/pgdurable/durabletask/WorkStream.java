package io.pgdurable.durabletask;

import io.grpc.stub.ServerCallStreamObserver;
import io.pgdurable.durabletask.protocol.OrchestratorService.WorkItem;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker's {@code GetWorkItems} stream: how many items of each kind it may hold at a time (a slot per item, taken
 * while the worker holds it), the lanes that fill those slots, and the sending of items to it.
 */
final class WorkStream {
    private static final Logger LOG = LoggerFactory.getLogger(WorkStream.class);

    final long id;
    final int orchestrationLimit;
    final int activityLimit;
    final Semaphore orchestrationSlot;
    final Semaphore activitySlot;
    final AtomicBoolean open = new AtomicBoolean(true);
    final List<Thread> lanes = new CopyOnWriteArrayList<>();
    private final ServerCallStreamObserver<WorkItem> observer;
    private final WorkDispatcher dispatcher;

    WorkStream(long id, ServerCallStreamObserver<WorkItem> observer, int orchestrationLimit, int activityLimit,
               WorkDispatcher dispatcher) {
        this.id = id;
        this.observer = observer;
        this.orchestrationLimit = orchestrationLimit;
        this.activityLimit = activityLimit;
        this.orchestrationSlot = new Semaphore(orchestrationLimit);
        this.activitySlot = new Semaphore(activityLimit);
        this.dispatcher = dispatcher;
    }

    /** Hands an item to the worker; false when the stream is gone. */
    boolean send(WorkItem item) {
        synchronized (this) { // StreamObserver is not thread-safe; onNext only buffers, it does not block
            if (!open.get() || dispatcher.isClosed()) {
                return false; // stopping: a fetch that returned meanwhile goes back, it is not new work to hand out
            }
            try {
                observer.onNext(item);
                return true;
            } catch (RuntimeException e) {
                LOG.info("worker stream {}: sending failed ({}); closing it", id, e.toString());
            }
        }
        dispatcher.drop(this, "sending failed");
        return false;
    }

    /** Ends the stream for the worker (sidecar stopping). */
    void complete() {
        synchronized (this) {
            try {
                observer.onCompleted();
            } catch (RuntimeException alreadyGone) {
                // cancelled meanwhile
            }
        }
    }
}
