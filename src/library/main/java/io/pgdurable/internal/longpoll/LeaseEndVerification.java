package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.time.Clock;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease ends that come due are verified, not woken: most leases end in an ack long before their time, and each wake
 * for a gone item costs a claim (two, with its pass-on) per queue and cadence until every stale lease end has
 * passed. A due lease end asks for a verification instead, at most one per queue per cadence; lease ends that come
 * due while a requested verification has not started ride along with it, later ones wait for the next cadence. The
 * verification asks the one-statement probe first; the timer scan that follows (or not, see {@link ScanScheduler})
 * forgets the tracked lease ends it supersedes.
 *
 * <p>Its bookkeeping is guarded by the lock of the {@link DeadlineTimer} that calls {@link #due} and {@link #take},
 * so a scan takes its mark and the lease ends it verifies in one step.
 */
final class LeaseEndVerification {
    private static final Logger LOG = LoggerFactory.getLogger(LeaseEndVerification.class);
    /** Most tags a merged lease end names before it stands for any tag. */
    private static final int MAX_MERGED_TAGS = 16;

    /** The due lease ends of one verification, per queue (routes merged), and the time to ask about. */
    record Due(Map<QueueKind, Hint> byQueue, long askAt) {
        boolean isEmpty() {
            return byQueue.isEmpty();
        }
    }

    private final WorkScanner scanner;
    private final WaiterRegistry registry;
    private final Clock clock;
    private final long cadenceMs;
    /** Per queue, when the latest verification of due lease ends was asked for. */
    private final Map<QueueKind, Long> lastVerification = new EnumMap<>(QueueKind.class);
    /** Per queue, the due lease ends (routes merged) a requested scan has yet to verify; taken when the scan starts. */
    private final Map<QueueKind, Hint> toVerify = new EnumMap<>(QueueKind.class);
    /**
     * Per queue, the latest time among the lease ends in {@link #toVerify}: they fire {@code timerLead} early, so the
     * verification asks about this time, which covers each of them.
     */
    private final Map<QueueKind, Long> verifyAt = new EnumMap<>(QueueKind.class);

    LeaseEndVerification(WorkScanner scanner, WaiterRegistry registry, Clock clock, long cadenceMs) {
        this.scanner = scanner;
        this.registry = registry;
        this.clock = clock;
        this.cadenceMs = cadenceMs;
        for (QueueKind q : QueueKind.values()) {
            lastVerification.put(q, Long.MIN_VALUE / 2);
        }
    }

    /**
     * A lease end {@code h} came due at {@code now}: it joins the verification already requested for its queue, or
     * requests one (true: the caller starts the scan), or, within a cadence of the last one, goes back into
     * {@code deadlines} for the next cadence. The caller holds the deadline lock.
     */
    boolean due(Hint h, long now, Deadlines deadlines) {
        QueueKind q = h.queue();
        if (toVerify.containsKey(q)) {
            toVerify.put(q, sameRoutes(toVerify.get(q), h));
            verifyAt.merge(q, h.atMs(), Math::max);
            return false;
        }
        if (now - lastVerification.get(q) >= cadenceMs) {
            lastVerification.put(q, now);
            toVerify.put(q, h);
            verifyAt.put(q, h.atMs());
            return true;
        }
        deadlines.add(new Hint(q, lastVerification.get(q) + cadenceMs, 0, h.untagged(), h.tags(), h.sessions(),
                h.hops()));
        return false;
    }

    /** Takes the requested verifications for a scan that starts now. The caller holds the deadline lock. */
    Due take() {
        long askAt = Long.MIN_VALUE;
        Map<QueueKind, Hint> verifying = new EnumMap<>(QueueKind.class);
        verifying.putAll(toVerify);
        toVerify.clear();
        for (long at : verifyAt.values()) {
            askAt = Math.max(askAt, at);
        }
        verifyAt.clear();
        return new Due(verifying, askAt);
    }

    /**
     * The probe's answer for due lease ends: wakes for what is claimable at the latest of their times (a due lease
     * end whose item is claimable is among it); true when it found anything. They fire {@code timerLead} early, so
     * the question is usually about the next millisecond: its answer's hints carry that time, and the fetches they
     * wake wait for it before they claim, so nothing is claimed before its lease ended. A count at the cap routes by
     * the items it counted only, so it cannot vouch for a lease-ended item: those lease ends wake a fetch themselves.
     */
    boolean probe(Due due) {
        List<Hint> claimable;
        try {
            claimable = scanner.probe(Math.max(clock.millis(), due.askAt()));
        } catch (RuntimeException e) {
            LOG.debug("pgdurable: lease-end probe failed", e);
            return false;
        }
        for (Hint h : claimable) {
            Hint leaseEnd = due.byQueue().get(h.queue());
            if (leaseEnd != null && h.count() >= Hint.SCAN_CAP) {
                registry.wake(leaseEnd, null, WakeSource.DEADLINE);
            }
        }
        // Woken directly, not routed: a hint for the next millisecond would otherwise be tracked and fire through the
        // timer thread, a hand-off the lead was meant to save.
        claimable.forEach(h -> registry.wake(h, null, WakeSource.PROBE));
        return !claimable.isEmpty();
    }

    /**
     * The scan that was to verify them failed, and the probe before it found nothing or failed (it cannot tell): the
     * lease ends wake a fetch each, as they would without verification.
     */
    void unverified(Due due) {
        due.byQueue().values().forEach(h -> registry.wake(h, null, WakeSource.DEADLINE));
    }

    /** One lease end whose route accepts whatever either accepts (the earlier time). */
    private static Hint sameRoutes(Hint a, Hint b) {
        Set<String> tags = null;
        if (a.tags() != null && b.tags() != null) {
            tags = new TreeSet<>(a.tags());
            tags.addAll(b.tags());
            if (tags.size() > MAX_MERGED_TAGS) {
                tags = null;
            }
        }
        return new Hint(a.queue(), Math.min(a.atMs(), b.atMs()), 0, a.untagged() || b.untagged(), tags,
                a.sessions() || b.sessions(), 0);
    }
}
