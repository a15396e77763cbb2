package io.pgdurable.postgres;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.spi.WorkItem;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a committed write makes claimable, and when: the hints a provider announces after each operation. Every
 * operation that can make work claimable (now, later, or when a lease ends) has its method here; operations absent
 * from this class (history reads and appends, deletes, metadata) make nothing claimable.
 */
final class Announcements {
    /** Distinct visibility times announced per write; later ones are covered by one open-ended hint. */
    static final int MAX_TIMES = 8;

    private Announcements() {}

    /** Activity items became visible at {@code atMs}. */
    static List<Hint> workerItems(long atMs, Collection<WorkItem.ActivityExecute> items) {
        return items.isEmpty() ? List.of() : List.of(routedTo(atMs, items.size(), items));
    }

    /**
     * A worker hint whose routing (untagged, tags, sessions) covers {@code items}; null when one of them is not an
     * activity (nothing to route by).
     */
    private static Hint routedTo(long atMs, int count, Collection<? extends WorkItem> items) {
        boolean untagged = false;
        boolean sessions = false;
        Set<String> tags = new HashSet<>();
        for (WorkItem w : items) {
            if (!(w instanceof WorkItem.ActivityExecute a)) {
                return null;
            }
            if (a.tag() == null) {
                untagged = true;
            } else {
                tags.add(a.tag());
            }
            sessions |= a.sessionId() != null;
        }
        return new Hint(QueueKind.WORKER, atMs, count, untagged, tags, sessions, 0);
    }

    /**
     * Orchestrator messages, by visibility time: one hint per distinct time (each delayed message needs its own
     * deadline), the earliest {@link #MAX_TIMES}; the time after those, if any, becomes an open-ended hint whose
     * wake finds the rest. Counts are instances, not messages.
     */
    static List<Hint> orchestratorMessages(List<String> instances, List<Long> visibleAtMs) {
        Map<Long, Set<String>> byTime = new TreeMap<>();
        for (int i = 0; i < instances.size(); i++) {
            byTime.computeIfAbsent(visibleAtMs.get(i), t -> new HashSet<>()).add(instances.get(i));
        }
        List<Hint> hints = new ArrayList<>(Math.min(byTime.size(), MAX_TIMES + 1));
        for (Map.Entry<Long, Set<String>> e : byTime.entrySet()) {
            boolean last = hints.size() == MAX_TIMES;
            hints.add(new Hint(QueueKind.ORCHESTRATOR, e.getKey(), last ? 0 : e.getValue().size(), true, null, false,
                    0));
            if (last) {
                break;
            }
        }
        return hints;
    }

    /**
     * A committed turn: its activities (visible now), its messages to instances (timers at their fire time), and the
     * messages that arrived for the instance during the turn ({@code lateMessagesAtMs}, null when none did: the
     * released instance is claimable again from that time).
     */
    static List<Hint> turn(long nowMs, List<WorkItem> workerItems, String[] orchInstances, Long[] orchVisibleAtMs,
                           Long lateMessagesAtMs) {
        List<WorkItem.ActivityExecute> activities = new ArrayList<>(workerItems.size());
        for (WorkItem w : workerItems) {
            if (w instanceof WorkItem.ActivityExecute a) {
                activities.add(a);
            }
        }
        List<Hint> hints = new ArrayList<>(workerItems(nowMs, activities));
        hints.addAll(orchestratorMessages(Arrays.asList(orchInstances), Arrays.asList(orchVisibleAtMs)));
        if (lateMessagesAtMs != null) {
            hints.addAll(orchestratorMessage(lateMessagesAtMs));
        }
        return hints;
    }

    /** One orchestrator message for one instance. */
    static List<Hint> orchestratorMessage(long visibleAtMs) {
        return List.of(new Hint(QueueKind.ORCHESTRATOR, visibleAtMs, 1, true, null, false, 0));
    }

    /** An orchestration lease was taken or renewed: a crashed owner's instance is claimable when it ends. */
    static List<Hint> orchestrationLease(long untilMs) {
        return List.of(new Hint(QueueKind.ORCHESTRATOR, untilMs, 0, true, null, false, 0));
    }

    /**
     * Activity leases were taken: the items come back when they end; a session lease taken with them likewise frees
     * its session when it ends.
     */
    static List<Hint> activityLeases(long untilMs, Collection<WorkItem> claimed, Long sessionUntilMs) {
        if (claimed.isEmpty()) {
            return List.of();
        }
        Hint lease = routedTo(untilMs, 0, claimed);
        if (lease == null) {
            return List.of(leaseEndOfAnyActivity(untilMs));
        }
        return lease.sessions() && sessionUntilMs != null ? List.of(lease, sessionLease(sessionUntilMs))
                : List.of(lease);
    }

    /** Activity leases were renewed (which items is not known here: any filter may match). */
    static List<Hint> activityLeaseRenewed(long untilMs) {
        return List.of(leaseEndOfAnyActivity(untilMs));
    }

    /** Session leases end at {@code untilMs}: their items become claimable by other owners. */
    static Hint sessionLease(long untilMs) {
        return new Hint(QueueKind.WORKER, untilMs, 0, true, null, true, 0);
    }

    /** An abandoned activity is claimable again at {@code atMs} (its tag and session are not known here). */
    static List<Hint> activityReleased(long atMs) {
        return List.of(new Hint(QueueKind.WORKER, atMs, 1, true, null, true, 0));
    }

    private static Hint leaseEndOfAnyActivity(long untilMs) {
        return new Hint(QueueKind.WORKER, untilMs, 0, true, null, true, 0);
    }

    /** Concatenates hint lists, skipping empty ones. */
    @SafeVarargs
    static List<Hint> all(List<Hint>... parts) {
        List<Hint> out = new ArrayList<>();
        for (List<Hint> p : parts) {
            out.addAll(p);
        }
        return out;
    }
}
