package io.pgdurable.postgres;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The orchestration turns this provider handed out and has not yet seen end, by instance. A message for an instance
 * whose turn is in progress cannot be claimed before the turn ends (the instance lock), so waking one of this
 * process's fetches for it at once only buys an empty claim: under fan-out, every activity completion that arrives
 * while its orchestration's turn runs did exactly that. The wake is deferred to the turn's end instead.
 *
 * <p>Why nothing is lost: a deferred message committed before {@link #defer} marked the turn, and the marked turn's
 * {@link #end} happens before the provider announces what the ending released; a wake given after {@code end} leads
 * to a claim that sees the message. The ack's own announcement covers messages its transaction saw; the provider adds
 * a wake when it did not announce one and something was deferred. Only this process's waiters are spared: other
 * processes are told by NOTIFY as before (they cannot see this map). A turn whose lease ran out defers nothing (its
 * entry is dropped when next consulted): the lease end is announced as a deadline of its own.
 */
final class TurnsInProgress {
    /** Expired entries are swept when the map grows past this (a turn that was never acked nor abandoned). */
    static final int SWEEP_ABOVE = 1024;

    private record Turn(String token, long lockedUntilMs, boolean wakeDeferred) {
        Turn deferred() {
            return wakeDeferred ? this : new Turn(token, lockedUntilMs, true);
        }
    }

    private final ConcurrentHashMap<String, Turn> byInstance = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, String> instanceByToken = new ConcurrentHashMap<>();

    /** A fetch handed out {@code instance}'s turn under {@code token}, locked until {@code lockedUntilMs}. */
    void started(String instance, String token, long lockedUntilMs, long nowMs) {
        if (instanceByToken.size() >= SWEEP_ABOVE) {
            sweep(nowMs);
        }
        Turn previous = byInstance.put(instance, new Turn(token, lockedUntilMs, false));
        if (previous != null) {
            instanceByToken.remove(previous.token(), instance);
        }
        instanceByToken.put(token, instance);
    }

    /** The turn's lease was renewed until {@code lockedUntilMs}. */
    void renewed(String token, long lockedUntilMs) {
        String instance = instanceByToken.get(token);
        if (instance != null) {
            byInstance.computeIfPresent(instance, (k, t) -> t.token().equals(token)
                    ? new Turn(token, lockedUntilMs, t.wakeDeferred()) : t);
        }
    }

    /**
     * A message for {@code instance}, claimable at {@code nowMs}, has committed: true when a turn of this provider
     * holds the instance, in which case the local wake is deferred to that turn's {@link #end}.
     */
    boolean defer(String instance, long nowMs) {
        if (instance == null || byInstance.isEmpty()) {
            return false;
        }
        return byInstance.computeIfPresent(instance, (k, t) -> t.lockedUntilMs() > nowMs ? t.deferred() : null) != null;
    }

    /** True when a turn of this provider holds {@code instance} at {@code nowMs} (a look only: nothing is marked). */
    boolean holds(String instance, long nowMs) {
        if (byInstance.isEmpty()) {
            return false;
        }
        Turn t = byInstance.get(instance);
        return t != null && t.lockedUntilMs() > nowMs;
    }

    /** The turn ended (acked, abandoned, or its ack failed): true when a local wake was deferred to it. */
    boolean end(String token) {
        String instance = instanceByToken.remove(token);
        if (instance == null) {
            return false;
        }
        boolean[] deferred = new boolean[1];
        byInstance.computeIfPresent(instance, (k, t) -> {
            if (!t.token().equals(token)) {
                return t;
            }
            deferred[0] = t.wakeDeferred();
            return null;
        });
        return deferred[0];
    }

    /** Turns currently tracked (for tests). */
    int size() {
        return byInstance.size();
    }

    private void sweep(long nowMs) {
        byInstance.forEach((instance, t) -> {
            if (t.lockedUntilMs() <= nowMs) {
                byInstance.remove(instance, t);
            }
        });
        instanceByToken.forEach((token, instance) -> {
            Turn t = byInstance.get(instance);
            if (t == null || !t.token().equals(token)) {
                instanceByToken.remove(token, instance);
            }
        });
    }
}
