package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.Route;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.spi.DispatcherCapabilityFilter;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.SemverRange;
import io.pgdurable.spi.WorkItem;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The orchestrator queue's operations of {@link PostgresProvider}: turns are fetched (claimed, or with long polling
 * parked until one can be), acked, abandoned and renewed, and messages enqueued. The claim's SQL and decoding are
 * {@link OrchestrationClaimer}'s, the lease operations {@link Leases}', and how a write reaches waiting fetches the
 * provider's {@link WritePath}.
 */
final class OrchestratorQueue {
    private final Statements sql;
    private final Clock clock;
    private final Payloads payloads;
    private final OrchestrationClaimer claimer;
    private final Leases leases;
    /** Null in short-poll mode: a fetch then claims once and returns. */
    private final LongPoller longPoller;
    private final WritePath writes;
    private final WriteAnnouncements announcements;
    private final BatchEnqueuer batchEnqueuer;
    private final ClockSkewMonitor clockSkew;

    OrchestratorQueue(Statements sql, Clock clock, Payloads payloads, OrchestrationClaimer claimer, Leases leases,
                      LongPoller longPoller, WritePath writes, WriteAnnouncements announcements,
                      BatchEnqueuer batchEnqueuer, ClockSkewMonitor clockSkew) {
        this.sql = sql;
        this.clock = clock;
        this.payloads = payloads;
        this.claimer = claimer;
        this.leases = leases;
        this.longPoller = longPoller;
        this.writes = writes;
        this.announcements = announcements;
        this.batchEnqueuer = batchEnqueuer;
        this.clockSkew = clockSkew;
    }

    Optional<FetchedOrchestration> fetch(Duration lockTimeout, Duration pollTimeout,
                                         DispatcherCapabilityFilter filter) {
        String op = "fetchOrchestrationItem";
        long lockMs = Payloads.positiveMillis(op, "lockTimeout", lockTimeout);
        Long min = null;
        Long max = null;
        if (filter != null) {
            if (filter.supportedVersions().isEmpty()) {
                return Optional.empty(); // supports no version at all
            }
            SemverRange range = filter.supportedVersions().get(0);
            min = range.min().packed();
            max = range.max().packed();
        }
        Long minVersion = min;
        Long maxVersion = max;
        clockSkew.admit(op); // a long-polled fetch may park without a claim
        LongPoller.Claim<FetchedOrchestration> claim = visibleBy -> {
            clockSkew.admit(op); // the clock may have gone past the limit while the fetch was parked
            long now = clock.millis();
            Optional<FetchedOrchestration> got = claimer.claim(op, now, Math.max(now, visibleBy), lockMs, minVersion,
                    maxVersion);
            if (got.isPresent()) {
                writes.turnStarted(got.get().item().instance(), got.get().lockToken(), now + lockMs, now);
                announcements.announce(Announcements.orchestrationLease(now + lockMs), now);
            }
            return got;
        };
        return longPoller == null ? claim.attempt(LongPoller.Claim.NOW)
                : longPoller.fetchClaimingAhead(QueueKind.ORCHESTRATOR, Route.ORCHESTRATOR,
                        Arrays.asList(minVersion, maxVersion),
                        new HandOver.OrchestrationTaker(lockMs, minVersion, maxVersion), pollTimeout, op, claim);
    }

    void ack(String lockToken, long executionId, List<Event> historyDelta, List<WorkItem> workerItems,
             List<WorkItem> orchestratorItems, ExecutionMetadata metadata,
             List<ScheduledActivityIdentifier> cancelledActivities) {
        Payloads.notNull(TurnEncoder.OP, "lockToken", lockToken);
        TurnEncoder turn = new TurnEncoder(payloads, clock.millis(), executionId, historyDelta, workerItems,
                orchestratorItems, metadata, cancelledActivities);
        writes.ackTurn(lockToken, turn);
    }

    void abandon(String lockToken, Duration delay, boolean ignoreAttempt) {
        long now;
        try {
            now = leases.abandonOrchestrationItem(lockToken, delay, ignoreAttempt);
        } catch (RuntimeException e) {
            announcements.turnEnded(lockToken, clock.millis());
            throw e;
        }
        announcements.turnEnded(lockToken, now);
    }

    void renew(String lockToken, Duration extendFor) {
        writes.turnRenewed(lockToken, leases.renewOrchestrationItemLock(lockToken, extendFor));
    }

    void enqueue(WorkItem item, Duration delay) {
        String op = "enqueueForOrchestrator";
        String json = payloads.encode(op, "item", item);
        if (item instanceof WorkItem.ActivityExecute) {
            throw ProviderException.permanent(op, "ActivityExecute belongs on the worker queue; use enqueueForWorker");
        }
        long delayMs = Payloads.delayMillis(op, delay);
        long now = clock.millis();
        long visibleAt = now + delayMs;
        if (item instanceof WorkItem.TimerFired t && t.fireAtMs() > 0) {
            visibleAt = Math.max(t.fireAtMs(), visibleAt);
        }
        long visible = visibleAt;
        writes.writeMessage(new WritePath.MessageWrite(op, sql.enqueueOrchestratorItem,
                sql.enqueueOrchestratorItemNotifying, sql.enqueueOrchestratorItemClaiming, ps -> {
                    ps.setString(1, item.instance());
                    ps.setString(2, item.kind());
                    ps.setString(3, json);
                    ps.setLong(4, visible);
                    ps.setLong(5, now);
                }, item.instance(), visible, now));
    }

    void enqueueAll(List<WorkItem> items, Duration delay) {
        batchEnqueuer.enqueueAllForOrchestrator(items, delay);
    }
}
