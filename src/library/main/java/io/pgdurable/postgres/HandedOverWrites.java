package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.strings;

import io.pgdurable.internal.longpoll.Reservation;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A long-polling provider's first write path (docs/long-polling.md, "Hand-over"): a write whose item one of this
 * provider's own parked fetches can take gives it to that fetch already leased (a worker item) or with its instance
 * already claimed (an orchestrator message due now), in the write's own transaction, so the fetch returns it without
 * a claim. A write no parked fetch takes goes to the next path. It also keeps the turns this provider runs
 * ({@link TurnsInProgress}), whose instances no hand-over is tried for and whose messages wake no local fetch early.
 */
final class HandedOverWrites implements WritePath {
    private final WritePath next;
    private final SqlRunner db;
    private final Statements sql;
    private final HandOver handOver;
    private final OrchestrationClaimer orchestrations;
    private final Leases leases;
    private final WriteAnnouncements announcements;
    private final TurnsInProgress turns;

    HandedOverWrites(WritePath next, SqlRunner db, Statements sql, HandOver handOver,
                     OrchestrationClaimer orchestrations, Leases leases, WriteAnnouncements announcements) {
        this.next = next;
        this.db = db;
        this.sql = sql;
        this.handOver = handOver;
        this.orchestrations = orchestrations;
        this.leases = leases;
        this.announcements = announcements;
        this.turns = announcements.turns();
    }

    /** The enqueue of an item leased to a parked fetch of this provider, then handed to it (no announcement). */
    @Override
    public void enqueueForWorker(String op, String json, long now, WorkItem.ActivityExecute item) {
        HandOver.Plan plan = handOver.reserve(List.of(item));
        if (plan.isEmpty()) {
            next.enqueueForWorker(op, json, now, item);
            return;
        }
        try {
            db.call(op, c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.enqueueWorkerItemLeased)) {
                    AnnouncedWrites.bindWorkerItem(ps, json, now, item);
                    ps.setString(8, plan.tokens[0]);
                    ps.setLong(9, plan.lockMs[0]);
                    ps.execute();
                    return null;
                }
            });
        } catch (RuntimeException e) {
            handOver.failed(plan);
            throw e;
        }
        handOver.delivered(plan, List.of(item), now, Set.of(plan.tokens[0]));
    }

    /**
     * A message due now for an instance no turn of this provider holds, while one of its orchestrator fetches is
     * parked: the write also claims the instance for that fetch, then hands the batch to it with the turn registered
     * and its lease end announced, as a claim would. When the instance could not be claimed, the message is announced
     * as usual; when the fetch stopped waiting meanwhile, the claim is released.
     */
    @Override
    public void writeMessage(MessageWrite w) {
        long now = w.now();
        Reservation parked = w.visibleAt() <= now && !turns.holds(w.instance(), now)
                ? handOver.reserveOrchestration() : null;
        if (parked == null) {
            next.writeMessage(w);
            return;
        }
        HandOver.OrchestrationTaker taker = (HandOver.OrchestrationTaker) parked.takes();
        String token = SqlRunner.newToken();
        Optional<FetchedOrchestration> claimed;
        try {
            claimed = orchestrations.writeClaiming(w.op(), w.claiming(), w.binder(), token, taker);
        } catch (RuntimeException e) {
            parked.cancel();
            throw e;
        }
        if (claimed.isEmpty()) {
            parked.cancel();
            announcements.messageCommitted(w.instance(), now, now, false);
            return;
        }
        long lockedUntil = now + taker.lockMs();
        turns.started(w.instance(), token, lockedUntil, now);
        if (parked.handOver(claimed.get())) {
            announcements.announce(Announcements.orchestrationLease(lockedUntil), now);
        } else {
            turns.end(token);
            leases.releaseRefusedOrchestrationHandOver(token);
        }
    }

    /**
     * A turn whose activities parked fetches of this provider take: the ack leases them to those fetches' tokens
     * ({@code ack_orchestration_turn_handing_over}); nobody else is told of them, and the turn's announcement then
     * always takes the announcer's path.
     */
    @Override
    public void ackTurn(String lockToken, TurnEncoder turn) {
        HandOver.Plan plan = handOver.reserve(turn.workers);
        if (plan.isEmpty()) {
            next.ackTurn(lockToken, turn);
            return;
        }
        Long lateMessagesAt;
        try {
            Set<String> applied = new HashSet<>();
            lateMessagesAt = db.call(TurnEncoder.OP, c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.ackOrchestrationItemHandingOver)) {
                    int i = turn.bind(c, ps, lockToken);
                    ps.setArray(i++, c.createArrayOf("text", plan.tokens));
                    ps.setArray(i, c.createArrayOf("bigint", plan.lockMs));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        long nextVisible = rs.getLong(1);
                        Long late = rs.wasNull() ? null : nextVisible;
                        applied.clear();
                        applied.addAll(Arrays.asList(strings(rs.getArray(2))));
                        return late;
                    }
                }
            });
            handOver.delivered(plan, turn.workers, turn.now, applied);
        } catch (RuntimeException e) {
            handOver.failed(plan);
            announcements.turnEnded(lockToken, turn.now);
            throw e;
        }
        announcements.turnCommitted(lockToken, turn.now, turn.hints(plan.unhanded(turn.workers)), null,
                lateMessagesAt);
    }

    @Override
    public void turnStarted(String instance, String lockToken, long lockedUntilMs, long nowMs) {
        turns.started(instance, lockToken, lockedUntilMs, nowMs);
    }

    @Override
    public void turnRenewed(String lockToken, long lockedUntilMs) {
        turns.renewed(lockToken, lockedUntilMs);
    }
}
