package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.internal.longpoll.LongPoller;
import io.pgdurable.internal.longpoll.Reservation;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * Gives items this provider writes straight to its own parked fetches (docs/long-polling.md, "Hand-over"): before
 * the write it reserves a parked fetch per item that one can take, the write leases those items to the fetches'
 * tokens in its own transaction (for an orchestrator message, the write claims its instance), and after the
 * commit each leased item is handed over — or released at once when its fetch stopped waiting in between. A parked
 * fetch thus returns its item without a claim.
 */
final class HandOver {
    /** What a parked single-item fetch without a session configuration takes: its claim and its tag filter. */
    record Taker(WorkerClaim claim, TagFilter filter) {
        boolean fits(WorkItem.ActivityExecute item) {
            return item.sessionId() == null && filter.matches(item.tag());
        }

        /** Whether it takes an untagged item (one without a session): what other processes hand over. */
        boolean takesUntagged() {
            return filter.matches(null);
        }
    }

    /** What a parked orchestrator fetch takes: its lock time and the version range of its capability filter. */
    record OrchestrationTaker(long lockMs, Long minVersion, Long maxVersion) {
    }

    /** The reservations for one write's items, by item index; {@link #NONE} when nothing is handed over. */
    static final class Plan {
        static final Plan NONE = new Plan(0);

        private final Reservation[] reservations;
        /** Per item, the token it is leased to (null: written unleased, as always). */
        final String[] tokens;
        /** Per item, the reserved fetch's lock time (null where the token is null). */
        final Long[] lockMs;
        private int size;

        private Plan(int items) {
            reservations = new Reservation[items];
            tokens = new String[items];
            lockMs = new Long[items];
        }

        boolean isEmpty() {
            return size == 0;
        }

        /** The items that are not handed over: the ones other fetches, here and elsewhere, must hear of. */
        List<WorkItem> unhanded(List<WorkItem> items) {
            if (size == 0) {
                return items;
            }
            List<WorkItem> rest = new ArrayList<>(items.size() - size);
            for (int i = 0; i < items.size(); i++) {
                if (tokens[i] == null) {
                    rest.add(items.get(i));
                }
            }
            return rest;
        }
    }

    private final LongPoller poller;
    private final Leases leases;
    private final BiConsumer<List<Hint>, Long> announce;
    private final ClockSkewMonitor clockSkew;

    /**
     * @param poller    the provider's long poller, whose parked fetches take the items
     * @param clockSkew while it refuses leases nothing is handed over: the lease would be this clock's
     */
    HandOver(LongPoller poller, Leases leases, BiConsumer<List<Hint>, Long> announce, ClockSkewMonitor clockSkew) {
        this.poller = Objects.requireNonNull(poller, "poller");
        this.leases = leases;
        this.announce = announce;
        this.clockSkew = clockSkew;
    }

    /** What a fetch passes to {@link LongPoller#fetch} as what it takes: null when it can only claim. */
    static Taker takerFor(WorkerClaim claim, TagFilter filter) {
        return claim.session() != null ? null : new Taker(claim, filter);
    }

    /**
     * Reserves a parked orchestrator fetch for a message visible now, or null (none parked). The
     * message's instance is claimed for it in the write's transaction only if that fetch could claim it then: the
     * SQL checks the lock, the start and the version range, and when it cannot, the writer cancels the reservation
     * and announces the message as usual.
     */
    Reservation reserveOrchestration() {
        if (poller.waiting(QueueKind.ORCHESTRATOR) == 0 || !clockSkew.admits()) {
            return null;
        }
        return poller.reserve(QueueKind.ORCHESTRATOR, t -> t instanceof OrchestrationTaker);
    }

    /**
     * Reserves a parked fetch for each item one can take, in order. An activity named twice in the same write is never
     * handed over (the lease is applied by its name). Costs nothing beyond one counter read while no fetch waits, and
     * looks for a twin only once a fetch was reserved, so a busy provider's turns pay nothing per activity.
     */
    Plan reserve(List<WorkItem> items) {
        if (items.isEmpty() || poller.waiting() == 0 || !clockSkew.admits()) {
            return Plan.NONE;
        }
        Plan plan = null;
        for (int i = 0; i < items.size(); i++) {
            if (!(items.get(i) instanceof WorkItem.ActivityExecute a)) {
                continue;
            }
            Reservation r = poller.reserve(QueueKind.WORKER, t -> ((Taker) t).fits(a));
            if (r == null) {
                continue;
            }
            if (namedTwice(items, a)) {
                r.cancel();
                continue;
            }
            if (plan == null) {
                plan = new Plan(items.size());
            }
            plan.reservations[i] = r;
            plan.tokens[i] = SqlRunner.newToken();
            plan.lockMs[i] = ((Taker) r.takes()).claim().lockMs();
            plan.size++;
        }
        return plan == null ? Plan.NONE : plan;
    }

    /** The write failed: every reserved fetch waits on. */
    void failed(Plan plan) {
        for (Reservation r : plan.reservations) {
            if (r != null) {
                r.cancel();
            }
        }
    }

    /**
     * The write committed at {@code now}, leasing the items whose tokens are in {@code applied}: each goes to its
     * fetch (and its lease end to the announcer, as a claim's would), or is released when the fetch stopped waiting.
     * A reserved item the write did not lease (the turn also cancelled it) ends its reservation.
     */
    void delivered(Plan plan, List<WorkItem> items, long now, Set<String> applied) {
        for (int i = 0; i < plan.reservations.length; i++) {
            Reservation r = plan.reservations[i];
            if (r == null) {
                continue;
            }
            String token = plan.tokens[i];
            if (!applied.contains(token)) {
                r.cancel();
                continue;
            }
            WorkItem item = items.get(i);
            if (r.handOver(new FetchedWorkItem(item, token, 1))) {
                announce.accept(((Taker) r.takes()).claim().leaseHints(now, List.of(item)), now);
            } else {
                leases.releaseRefusedHandOver(token);
            }
        }
    }

    private static boolean namedTwice(List<WorkItem> items, WorkItem.ActivityExecute a) {
        int named = 0;
        for (WorkItem w : items) {
            if (w instanceof WorkItem.ActivityExecute o && o.id() == a.id() && o.executionId() == a.executionId()
                    && o.instance().equals(a.instance()) && ++named > 1) {
                return true;
            }
        }
        return false;
    }
}
