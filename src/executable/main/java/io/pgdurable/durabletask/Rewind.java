package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.ExecutionStartedEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorAction;
import io.pgdurable.durabletask.protocol.OrchestratorService.OrchestratorResponse;
import io.pgdurable.durabletask.protocol.OrchestratorService.RewindOrchestrationAction;
import io.pgdurable.spi.ExecutionMetadata;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The answer to a rewind turn. The worker rewrites the failed execution's history (failed activity results and
 * their scheduling taken out, the completion removed, a new Durable Task execution id) and returns it as its one
 * action; the sidecar stores it as the instance's next execution, running, and sends the instance a message to
 * itself so the worker replays it and schedules again what failed. A worker that does not know rewind (Durable Task
 * for Java 1.5.0) answers without that action: then nothing changes and the instance stays failed.
 */
final class Rewind {
    private static final Logger LOG = LoggerFactory.getLogger(Rewind.class);

    private Rewind() {}

    static TurnApplier.Ack apply(Turn t, OrchestratorResponse response, Instant now) {
        RewindOrchestrationAction rewind = null;
        for (OrchestratorAction a : response.getActionsList()) {
            if (a.hasRewindOrchestration()) {
                rewind = a.getRewindOrchestration();
            }
        }
        if (rewind == null || rewind.getNewHistoryCount() == 0) {
            LOG.warn("instance {}: the worker did not rewind the failed execution (a worker that does not know "
                    + "rewind); it stays failed", t.instance);
            return TurnApplier.consumeOnly(t);
        }
        AckBuilder out = new AckBuilder(1, now);
        HistoryEvent started = null;
        for (HistoryEvent h : rewind.getNewHistoryList()) {
            if (h.hasExecutionStarted() && started == null) {
                started = h;
            }
            out.record(h);
        }
        if (started == null) {
            LOG.warn("instance {}: the worker's rewound history has no ExecutionStarted event; it stays failed",
                    t.instance);
            return TurnApplier.consumeOnly(t);
        }
        t.sentEvents.forEach(out::record);
        if (t.lastCustomStatus != null) {
            out.recordCustomStatus(t.lastCustomStatus);
        }
        ExecutionStartedEvent s = started.getExecutionStarted();
        DtState running = t.running(s);
        ExecutionMetadata md = TurnApplier.executionMetadata(s)
                .withStatus(DtState.providerStatus(running.status()), running.toJson());
        out.toOrchestrators(DtMessages.toInstance(t.instance, 0, DtEvents.orchestratorStarted(now)));
        return out.build(t.lockToken, t.currentExecutionId + 1, md, true);
    }
}
