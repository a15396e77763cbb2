package io.pgdurable.durabletask;

import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The items out with the workers and their leases. Items are held under the keys the workers answer with (the 1.5.0
 * worker sends no token): the instance id for a turn, (instance id, task id) for an activity, the completion token
 * for an entity batch (the only key a batch result carries). Each turn and activity also carries a completion token,
 * which newer workers send back to abandon it. Leases are renewed while the worker holds them; an item let go of
 * wakes a stop waiting for the workers' results.
 */
final class HeldItems {
    private static final Logger LOG = LoggerFactory.getLogger(HeldItems.class);

    record ActivityKey(String instance, int taskId) {}

    /** An item out with a worker: the stream it was sent on and the completion token it was sent with. */
    sealed interface Held permits HeldTurn, HeldActivity, HeldEntity {
        WorkStream stream();

        String token();
    }

    record HeldTurn(Turn turn, WorkStream stream, String token) implements Held {}

    record HeldActivity(ActivityKey key, String lockToken, long executionId, WorkStream stream, String token)
            implements Held {}

    record HeldEntity(EntityBatches.Batch batch, WorkStream stream, String token) implements Held {}

    private final OrchestrationProvider provider;
    private final Duration lockTimeout;
    private final Map<String, HeldTurn> turns = new ConcurrentHashMap<>();
    private final Map<ActivityKey, HeldActivity> activities = new ConcurrentHashMap<>();
    private final Map<String, HeldEntity> entities = new ConcurrentHashMap<>();
    /** Completion token → the key its item is held under ({@code String} instance or {@link ActivityKey}). */
    private final Map<String, Object> tokens = new ConcurrentHashMap<>();
    private final AtomicLong tokenSeq = new AtomicLong();
    private final ReentrantLock settleLock = new ReentrantLock();
    private final Condition settled = settleLock.newCondition();

    HeldItems(OrchestrationProvider provider, Duration lockTimeout) {
        this.provider = provider;
        this.lockTimeout = lockTimeout;
    }

    int size() {
        return turns.size() + activities.size() + entities.size();
    }

    // ------------------------------------------------------------------ handing out

    private String newToken(WorkStream s, Object key) {
        String token = s.id + "-" + tokenSeq.incrementAndGet();
        tokens.put(token, key);
        return token;
    }

    /** Holds a turn for the stream about to be sent it. */
    HeldTurn holdTurn(Turn turn, WorkStream s) {
        HeldTurn mine = new HeldTurn(turn, s, newToken(s, turn.instance));
        HeldTurn previous = turns.put(turn.instance, mine);
        if (previous != null) {
            // Only possible when the earlier lease expired while its worker still held it: that worker's answer can
            // no longer be committed, so the new turn replaces it.
            tokens.remove(previous.token);
            previous.stream.orchestrationSlot.release();
            LOG.warn("instance {}: an earlier turn held by worker stream {} had lost its lease", turn.instance,
                    previous.stream.id);
        }
        return mine;
    }

    /** Holds an entity batch for the stream about to be sent it. */
    HeldEntity holdEntity(EntityBatches.Batch batch, WorkStream s) {
        HeldEntity mine = new HeldEntity(batch, s, "entity-" + s.id + "-" + tokenSeq.incrementAndGet());
        entities.put(mine.token, mine);
        return mine;
    }

    /**
     * Holds an activity for the stream about to be sent it; null when the same task id of an earlier execution is
     * still held: the worker's answer could not be told apart, so this one waits.
     */
    HeldActivity holdActivity(ActivityKey key, String lockToken, long executionId, WorkStream s) {
        HeldActivity mine = new HeldActivity(key, lockToken, executionId, s, newToken(s, key));
        if (activities.putIfAbsent(key, mine) != null) {
            tokens.remove(mine.token);
            return null;
        }
        return mine;
    }

    /** Lets go of an item its stream could not be sent: it is fetched again at once. */
    void unsent(Held mine) {
        tokens.remove(mine.token());
        if (mine instanceof HeldTurn t && turns.remove(t.turn.instance, t)) {
            abandonTurn(t.turn.lockToken, null);
        } else if (mine instanceof HeldEntity e && entities.remove(e.token, e)) {
            abandonTurn(e.batch.lockToken, null);
        } else if (mine instanceof HeldActivity a && activities.remove(a.key, a)) {
            abandonActivity(a.lockToken, null);
        } else {
            return; // already let go of: its stream ended meanwhile
        }
        settled();
    }

    // ------------------------------------------------------------------ taking back

    /**
     * The turn of {@code instance} the worker answers, no longer held; null when it is not held here. A worker that
     * sends the item's completion token gets the turn only if it is the one sent with that token: a result of an
     * earlier delivery, or one naming another worker's token, leaves the turn held.
     */
    HeldTurn takeTurn(String instance, String token) {
        return token.isEmpty() ? take(turns, instance) : takeWithToken(turns, instance, token);
    }

    HeldEntity takeEntity(String token) {
        return entities.remove(token);
    }

    /** As {@link #takeTurn}, for an activity. */
    HeldActivity takeActivity(ActivityKey key, String token) {
        return token.isEmpty() ? take(activities, key) : takeWithToken(activities, key, token);
    }

    private <K, H extends Held> H takeWithToken(Map<K, H> items, K key, String token) {
        H held = takeSent(items, key, token);
        if (held != null) {
            tokens.remove(token);
        }
        return held;
    }

    private <K, H extends Held> H take(Map<K, H> items, K key) {
        H held = items.remove(key);
        if (held != null) {
            tokens.remove(held.token());
        }
        return held;
    }

    /** The item held under {@code key}, no longer held, if it is the one sent with {@code token}; else null. */
    private static <K, H extends Held> H takeSent(Map<K, H> items, K key, String token) {
        H held = items.get(key);
        return held != null && held.token().equals(token) && items.remove(key, held) ? held : null;
    }

    /** Frees the stream's slot of an item taken back, so the stream takes other work. */
    void release(Semaphore slot) {
        slot.release();
        settled();
    }

    /**
     * Releases an item the worker will not run (it rejected it, e.g. a version it does not serve): its lease ends
     * now, so it is fetched again at once, and the stream's slot is free for other work. An unknown token (the item
     * was completed, or its stream ended) is a no-op: the item is released either way.
     */
    void abandon(String token) {
        HeldEntity entity = entities.remove(token);
        if (entity != null) {
            abandonTurn(entity.batch.lockToken, null);
            release(entity.stream.orchestrationSlot);
            LOG.debug("entity {}: the worker abandoned its batch", entity.batch.instance);
            return;
        }
        Object key = tokens.remove(token);
        if (key instanceof String instance) {
            HeldTurn held = takeSent(turns, instance, token);
            if (held != null) {
                abandonTurn(held.turn.lockToken, null);
                release(held.stream.orchestrationSlot);
                LOG.debug("instance {}: the worker abandoned its turn", instance);
            }
        } else if (key instanceof ActivityKey ak) {
            HeldActivity held = takeSent(activities, ak, token);
            if (held != null) {
                abandonActivity(held.lockToken, null);
                release(held.stream.activitySlot);
                LOG.debug("activity #{} of {}: the worker abandoned it", ak.taskId(), ak.instance());
            }
        }
    }

    /** Abandons everything the stream holds, so other workers get it at once; returns how many items. */
    int abandonAll(WorkStream s) {
        int abandoned = 0;
        for (Map.Entry<String, HeldTurn> e : turns.entrySet()) {
            if (e.getValue().stream == s && turns.remove(e.getKey(), e.getValue())) {
                tokens.remove(e.getValue().token);
                abandonTurn(e.getValue().turn.lockToken, null);
                abandoned++;
            }
        }
        for (Map.Entry<String, HeldEntity> e : entities.entrySet()) {
            if (e.getValue().stream == s && entities.remove(e.getKey(), e.getValue())) {
                abandonTurn(e.getValue().batch.lockToken, null);
                abandoned++;
            }
        }
        for (Map.Entry<ActivityKey, HeldActivity> e : activities.entrySet()) {
            if (e.getValue().stream == s && activities.remove(e.getKey(), e.getValue())) {
                tokens.remove(e.getValue().token);
                abandonActivity(e.getValue().lockToken, null);
                abandoned++;
            }
        }
        settled();
        return abandoned;
    }

    // ------------------------------------------------------------------ leases

    /** Ends the lease of a fetched turn or entity batch; a failure leaves it to end on its own. */
    void abandonTurn(String lockToken, Duration delay) {
        try {
            provider.abandonOrchestrationItem(lockToken, delay, false);
        } catch (ProviderException e) {
            LOG.debug("abandoning a turn failed (its lease ends on its own): {}", e.getMessage());
        }
    }

    /** Ends the lease of a fetched activity; a failure leaves it to end on its own. */
    void abandonActivity(String lockToken, Duration delay) {
        try {
            provider.abandonWorkItem(lockToken, delay, false);
        } catch (ProviderException e) {
            LOG.debug("abandoning an activity failed (its lease ends on its own): {}", e.getMessage());
        }
    }

    void renewAll() {
        for (HeldTurn h : turns.values()) {
            try {
                provider.renewOrchestrationItemLock(h.turn.lockToken, lockTimeout);
            } catch (ProviderException e) {
                LOG.debug("renewing the turn of {} failed: {}", h.turn.instance, e.getMessage());
            }
        }
        for (HeldEntity h : entities.values()) {
            try {
                provider.renewOrchestrationItemLock(h.batch.lockToken, lockTimeout);
            } catch (ProviderException e) {
                LOG.debug("renewing the batch of entity {} failed: {}", h.batch.instance, e.getMessage());
            }
        }
        for (Map.Entry<ActivityKey, HeldActivity> e : activities.entrySet()) {
            try {
                provider.renewWorkItemLock(e.getValue().lockToken, lockTimeout);
            } catch (ProviderException ex) {
                LOG.debug("renewing activity #{} of {} failed: {}", e.getKey().taskId(), e.getKey().instance(),
                        ex.getMessage());
            }
        }
    }

    // ------------------------------------------------------------------ stopping

    /** Waits until nothing is held, at most {@code grace}. */
    void awaitNone(Duration grace) throws InterruptedException {
        long deadline = System.nanoTime() + grace.toNanos();
        settleLock.lock();
        try {
            long left;
            while (size() > 0 && (left = deadline - System.nanoTime()) > 0) {
                // Woken by every result, abandon and dropped stream; the cap only bounds the cost of a path that
                // lets go of an item without saying so.
                settled.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(250)));
            }
        } finally {
            settleLock.unlock();
        }
    }

    /** Wakes a stop waiting for the workers' results: an item was let go of. */
    private void settled() {
        settleLock.lock();
        try {
            settled.signalAll();
        } finally {
            settleLock.unlock();
        }
    }
}
