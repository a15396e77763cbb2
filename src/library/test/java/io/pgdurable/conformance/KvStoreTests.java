package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.KvEntry;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderAdmin.PruneOptions;
import io.pgdurable.spi.ProviderAdmin.PruneResult;
import io.pgdurable.spi.WorkItem;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code kv_store} (CONTRACT §7.19, §2.2 step 7, §2.3 step 9, §2.16, §4.8): key-value events of a
 * turn go to the instance's delta, which client reads overlay on the committed store; the delta is merged into the
 * store when an execution ends; the fetch snapshot shows the committed store only; deletion removes both, pruning
 * neither.
 */
public abstract class KvStoreTests extends ConformanceTestBase {

    /** Event id of the OrchestrationCompleted written by {@link #completeExecution}. */
    protected static final long COMPLETED_EVENT_ID = 9999;
    /** Event id of the OrchestrationContinuedAsNew written by {@link #continueAsNew}. */
    protected static final long CONTINUED_EVENT_ID = 9998;

    // ------------------------------------------------------------------ helpers

    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> admin = p.asManagementCapability();
        assertNotNull(admin, "asManagementCapability returned null instead of an Optional");
        assertTrue(admin.isPresent(), "the provider must offer the management capability");
        return admin.get();
    }

    /** Pokes the instance, fetches the turn and returns it (the caller acks it). */
    protected static FetchedOrchestration pokeAndFetch(OrchestrationProvider p, String instance) {
        p.enqueueForOrchestrator(poke(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the poke of " + instance);
        assertEquals(instance, f.item().instance(), "fetched another instance");
        assertNotNull(f.item().kvSnapshot(), "the fetched item has no key-value snapshot");
        return f;
    }

    /** One turn that acks {@code delta} under {@code executionId} with empty metadata (no status change). */
    protected static void ackWithDelta(OrchestrationProvider p, String instance, long executionId,
                                       List<Event> delta) {
        FetchedOrchestration f = pokeAndFetch(p, instance);
        ack(p, f.lockToken(), executionId, delta, ExecutionMetadata.empty());
    }

    /** One turn that ends {@code executionId} as Completed, which merges its delta into the store. */
    protected static void completeExecution(OrchestrationProvider p, String instance, long executionId) {
        FetchedOrchestration f = pokeAndFetch(p, instance);
        ack(p, f.lockToken(), executionId, List.of(Events.orchestrationCompleted(COMPLETED_EVENT_ID, "done")),
                testOrchMetadata().withStatus(ExecutionMetadata.COMPLETED, "done"));
    }

    /**
     * Continue-as-new from execution {@code newExecutionId - 1} to {@code newExecutionId}: the old execution is acked
     * as ContinuedAsNew (output = the next input) together with a ContinueAsNew message, which is then fetched and
     * acked under the new execution with an OrchestrationStarted event.
     */
    protected static void continueAsNew(OrchestrationProvider p, String instance, long newExecutionId) {
        long previous = newExecutionId - 1;
        String nextInput = "{\"generation\":" + newExecutionId + "}";
        FetchedOrchestration f = pokeAndFetch(p, instance);
        assertEquals(previous, f.item().executionId(), "the turn before continue-as-new runs at the old execution");
        ack(p, f.lockToken(), previous, List.of(Events.orchestrationContinuedAsNew(CONTINUED_EVENT_ID, nextInput)),
                List.of(), List.of(new WorkItem.ContinueAsNew(instance, TEST_ORCH, nextInput, TEST_VERSION, List.of(),
                        null)),
                testOrchMetadata().withStatus(ExecutionMetadata.CONTINUED_AS_NEW, nextInput));

        FetchedOrchestration can = fetchOrchRequired(p, "the ContinueAsNew message of " + instance);
        assertEquals(instance, can.item().instance(), "fetched another instance");
        assertEquals(previous, can.item().executionId(), "the ContinueAsNew turn is fetched at the old execution");
        assertEquals(1, can.item().messages().size(), "the batch is the ContinueAsNew message");
        assertInstanceOf(WorkItem.ContinueAsNew.class, can.item().messages().get(0));
        ack(p, can.lockToken(), newExecutionId,
                List.of(Events.orchestrationStarted(1, TEST_ORCH, TEST_VERSION, nextInput)), testOrchMetadata());
    }

    /** Fetches a turn of the instance, returns its snapshot and acks the turn without changes. */
    protected static Map<String, KvEntry> fetchSnapshot(OrchestrationProvider p, String instance,
                                                        long currentExecutionId) {
        FetchedOrchestration f = pokeAndFetch(p, instance);
        assertEquals(currentExecutionId, f.item().executionId(), "the turn runs at the current execution");
        Map<String, KvEntry> snapshot = f.item().kvSnapshot();
        ackEmpty(p, f.lockToken(), currentExecutionId);
        return snapshot;
    }

    /** getKvValue, which must return an Optional. */
    protected static Optional<String> kv(OrchestrationProvider p, String instance, String key) {
        Optional<String> value = p.getKvValue(instance, key);
        assertNotNull(value, "getKvValue returned null instead of an Optional");
        return value;
    }

    /** getKvAllValues, which must return a map. */
    protected static Map<String, String> kvAll(OrchestrationProvider p, String instance) {
        Map<String, String> all = p.getKvAllValues(instance);
        assertNotNull(all, "getKvAllValues returned null instead of a map");
        return all;
    }

    protected static Event set(long eventId, String key, String value) {
        return Events.keyValueSet(eventId, key, value, 0);
    }

    protected static Event set(long eventId, String key, String value, long lastUpdatedAtMs) {
        return Events.keyValueSet(eventId, key, value, lastUpdatedAtMs);
    }

    /** The value of {@code key} in a snapshot, null when absent. */
    protected static String snapValue(Map<String, KvEntry> snapshot, String key) {
        KvEntry e = snapshot.get(key);
        return e == null ? null : e.value();
    }

    protected static PruneOptions keepLast(int n) {
        return new PruneOptions(Optional.of(n), Optional.empty());
    }

    // ------------------------------------------------------------------ tests

    /** A KeyValueSet in an ack is readable at once. */
    @Test
    void test_kv_set_and_get() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-set");
        ackWithDelta(p, "kv-set", 1, List.of(set(100, "counter", "42")));

        assertEquals(Optional.of("42"), kv(p, "kv-set", "counter"));
    }

    /** A second set of the same key replaces the value. */
    @Test
    void test_kv_overwrite() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-over");
        ackWithDelta(p, "kv-over", 1, List.of(set(100, "status", "old")));
        assertEquals(Optional.of("old"), kv(p, "kv-over", "status"), "the first value");

        ackWithDelta(p, "kv-over", 1, List.of(set(101, "status", "new")));
        assertEquals(Optional.of("new"), kv(p, "kv-over", "status"), "the second set wins");
    }

    /** KeyValueCleared removes the key. */
    @Test
    void test_kv_clear_single() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-clr1");
        ackWithDelta(p, "kv-clr1", 1, List.of(set(100, "remove_me", "x")));
        assertEquals(Optional.of("x"), kv(p, "kv-clr1", "remove_me"), "set before the clear");

        ackWithDelta(p, "kv-clr1", 1, List.of(Events.keyValueCleared(101, "remove_me")));
        assertEquals(Optional.empty(), kv(p, "kv-clr1", "remove_me"), "cleared");
    }

    /** KeyValuesCleared removes every key of the instance. */
    @Test
    void test_kv_clear_all() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-clra");
        ackWithDelta(p, "kv-clra", 1, List.of(set(100, "a", "1"), set(101, "b", "2")));
        assertEquals(Optional.of("1"), kv(p, "kv-clra", "a"));
        assertEquals(Optional.of("2"), kv(p, "kv-clra", "b"));

        ackWithDelta(p, "kv-clra", 1, List.of(Events.keyValuesCleared(102)));
        assertEquals(Optional.empty(), kv(p, "kv-clra", "a"));
        assertEquals(Optional.empty(), kv(p, "kv-clra", "b"));
        assertEquals(Map.of(), kvAll(p, "kv-clra"), "no key is left");
    }

    /** A key that was never set reads as empty. */
    @Test
    void test_kv_get_nonexistent() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-none");
        assertEquals(Optional.empty(), kv(p, "kv-none", "nope"));
    }

    /** Keys merged when execution 1 completed are in the next fetch's snapshot, with value and timestamp. */
    @Test
    void test_kv_snapshot_in_fetch() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-fetch");
        ackWithDelta(p, "kv-fetch", 1, List.of(set(100, "x", "10", 1_111), set(101, "y", "20", 2_222)));
        completeExecution(p, "kv-fetch", 1);

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-fetch", 1);
        assertEquals(2, snapshot.size(), "snapshot: " + snapshot);
        assertEquals(new KvEntry("10", 1_111), snapshot.get("x"));
        assertEquals(new KvEntry("20", 2_222), snapshot.get("y"));
    }

    /** Set keep and remove, clear remove, complete: the snapshot holds only keep. */
    @Test
    void test_kv_snapshot_after_clear_single() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-fclr1");
        ackWithDelta(p, "kv-fclr1", 1, List.of(set(100, "keep", "yes"), set(101, "remove", "bye")));
        ackWithDelta(p, "kv-fclr1", 1, List.of(Events.keyValueCleared(102, "remove")));
        completeExecution(p, "kv-fclr1", 1);

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-fclr1", 1);
        assertEquals(1, snapshot.size(), "snapshot: " + snapshot);
        assertEquals("yes", snapValue(snapshot, "keep"));
        assertFalse(snapshot.containsKey("remove"), "the cleared key is not in the snapshot");
    }

    /** Set a and b, clear all in a later turn, complete: the next snapshot is empty. */
    @Test
    void test_kv_snapshot_after_clear_all() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-fclra");
        ackWithDelta(p, "kv-fclra", 1, List.of(set(100, "a", "1"), set(101, "b", "2")));
        ackWithDelta(p, "kv-fclra", 1, List.of(Events.keyValuesCleared(102)));
        completeExecution(p, "kv-fclra", 1);

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-fclra", 1);
        assertEquals(Map.of(), snapshot, "everything was cleared");
        assertEquals(Map.of(), kvAll(p, "kv-fclra"), "client reads agree");
    }

    /** A key set in execution 1 and overwritten in execution 2 survives pruning execution 1 with the new value. */
    @Test
    void test_kv_execution_id_tracking() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-exec");
        ackWithDelta(p, "kv-exec", 1, List.of(set(100, "shared", "from_exec_1")));
        assertEquals(Optional.of("from_exec_1"), kv(p, "kv-exec", "shared"));

        continueAsNew(p, "kv-exec", 2);
        ackWithDelta(p, "kv-exec", 2, List.of(set(200, "shared", "from_exec_2")));
        assertEquals(Optional.of("from_exec_2"), kv(p, "kv-exec", "shared"), "execution 2's value");

        admin.pruneExecutions("kv-exec", keepLast(1));
        assertEquals(List.of(2L), admin.listExecutions("kv-exec"), "execution 1 was pruned");
        assertEquals(Optional.of("from_exec_2"), kv(p, "kv-exec", "shared"),
                "the key survives pruning of the execution that first wrote it");
    }

    /** A value from execution 1 is readable; execution 2's overwrite wins. */
    @Test
    void test_kv_cross_execution_overwrite() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-xexec");
        ackWithDelta(p, "kv-xexec", 1, List.of(set(100, "k", "v1")));
        assertEquals(Optional.of("v1"), kv(p, "kv-xexec", "k"), "execution 1's value");

        continueAsNew(p, "kv-xexec", 2);
        assertEquals(Optional.of("v1"), kv(p, "kv-xexec", "k"), "execution 1's value survives continue-as-new");
        ackWithDelta(p, "kv-xexec", 2, List.of(set(200, "k", "v2")));
        assertEquals(Optional.of("v2"), kv(p, "kv-xexec", "k"), "execution 2 overwrites");
    }

    /** Set in execution 1, cleared in execution 2, set again in execution 3. */
    @Test
    void test_kv_cross_execution_remove_readd() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-xrm");
        ackWithDelta(p, "kv-xrm", 1, List.of(set(100, "cycle", "exec1")));
        assertEquals(Optional.of("exec1"), kv(p, "kv-xrm", "cycle"));

        continueAsNew(p, "kv-xrm", 2);
        ackWithDelta(p, "kv-xrm", 2, List.of(Events.keyValueCleared(200, "cycle")));
        assertEquals(Optional.empty(), kv(p, "kv-xrm", "cycle"), "cleared in execution 2");

        continueAsNew(p, "kv-xrm", 3);
        assertEquals(Optional.empty(), kv(p, "kv-xrm", "cycle"), "the clear was committed at continue-as-new");
        ackWithDelta(p, "kv-xrm", 3, List.of(set(300, "cycle", "exec3")));
        assertEquals(Optional.of("exec3"), kv(p, "kv-xrm", "cycle"), "set again in execution 3");
    }

    /** Pruning execution 1 keeps a key that execution 2 overwrote, with execution 2's value. */
    @Test
    void test_kv_prune_preserves_overwritten() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-prn1");
        ackWithDelta(p, "kv-prn1", 1, List.of(set(100, "survive", "v1")));
        continueAsNew(p, "kv-prn1", 2);
        ackWithDelta(p, "kv-prn1", 2, List.of(set(200, "survive", "v2")));

        PruneResult result = admin.pruneExecutions("kv-prn1", keepLast(1));
        assertEquals(1, result.executionsDeleted(), "execution 1 is pruned: " + result);
        assertEquals(Optional.of("v2"), kv(p, "kv-prn1", "survive"), "the overwritten key survives pruning");
    }

    /** A key written only by execution 1 survives pruning it; execution 2's key survives too. */
    @Test
    void test_kv_prune_preserves_all_keys() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-prn2");
        ackWithDelta(p, "kv-prn2", 1, List.of(set(100, "orphan", "survives")));
        continueAsNew(p, "kv-prn2", 2);
        ackWithDelta(p, "kv-prn2", 2, List.of(set(200, "keeper", "alive")));
        assertEquals(Optional.of("survives"), kv(p, "kv-prn2", "orphan"));
        assertEquals(Optional.of("alive"), kv(p, "kv-prn2", "keeper"));

        PruneResult result = admin.pruneExecutions("kv-prn2", keepLast(1));
        assertEquals(1, result.executionsDeleted(), "execution 1 is pruned: " + result);
        assertEquals(Optional.of("survives"), kv(p, "kv-prn2", "orphan"),
                "key-value data is instance-scoped and survives pruning");
        assertEquals(Optional.of("alive"), kv(p, "kv-prn2", "keeper"));
    }

    /** The same key on two instances holds two values. */
    @Test
    void test_kv_instance_isolation() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-iso-a");
        createInstance(p, "kv-iso-b");
        ackWithDelta(p, "kv-iso-a", 1, List.of(set(100, "shared_name", "from_a")));
        ackWithDelta(p, "kv-iso-b", 1, List.of(set(100, "shared_name", "from_b")));

        assertEquals(Optional.of("from_a"), kv(p, "kv-iso-a", "shared_name"));
        assertEquals(Optional.of("from_b"), kv(p, "kv-iso-b", "shared_name"));
    }

    /** Deleting a completed instance removes its key-value data. */
    @Test
    void test_kv_delete_instance_cascades() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-del");
        ackWithDelta(p, "kv-del", 1, List.of(set(100, "doomed", "bye")));
        completeExecution(p, "kv-del", 1);
        assertEquals(Optional.of("bye"), kv(p, "kv-del", "doomed"), "present before the deletion");

        admin.deleteInstance("kv-del", false);
        assertEquals(Optional.empty(), kv(p, "kv-del", "doomed"), "gone with the instance");
        assertEquals(Map.of(), kvAll(p, "kv-del"));
    }

    /** Clearing a key that was never set is accepted and the key stays absent. */
    @Test
    void test_kv_clear_nonexistent_key() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-clrne");
        ackWithDelta(p, "kv-clrne", 1, List.of(Events.keyValueCleared(100, "never_existed")));

        assertEquals(Optional.empty(), kv(p, "kv-clrne", "never_existed"));
        assertEquals(1 + 1, p.read("kv-clrne").size(), "the ack was committed (started + cleared)");
    }

    /** Reading a key of an unknown instance gives empty, not an error. */
    @Test
    void test_kv_get_unknown_instance() {
        OrchestrationProvider p = newProvider();
        assertEquals(Optional.empty(), kv(p, "no-such-instance", "key"));
        assertEquals(Map.of(), kvAll(p, "no-such-instance"));
    }

    /** Clear-all followed by a set in the same ack leaves only the new key. */
    @Test
    void test_kv_set_after_clear() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-sac");
        ackWithDelta(p, "kv-sac", 1, List.of(set(100, "old_a", "1"), set(101, "old_b", "2")));
        ackWithDelta(p, "kv-sac", 1, List.of(Events.keyValuesCleared(102), set(103, "new_x", "fresh")));

        assertEquals(Optional.empty(), kv(p, "kv-sac", "old_a"));
        assertEquals(Optional.empty(), kv(p, "kv-sac", "old_b"));
        assertEquals(Optional.of("fresh"), kv(p, "kv-sac", "new_x"));
        assertEquals(Map.of("new_x", "fresh"), kvAll(p, "kv-sac"));
    }

    /** The empty string is a value, not an absence. */
    @Test
    void test_kv_empty_value() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-empty");
        ackWithDelta(p, "kv-empty", 1, List.of(set(100, "blank", "")));

        assertEquals(Optional.of(""), kv(p, "kv-empty", "blank"));
    }

    /** A 64 KiB value round-trips exactly. */
    @Test
    void test_kv_large_value() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-big");
        StringBuilder sb = new StringBuilder(64 * 1024);
        for (int i = 0; i < 64 * 1024; i++) {
            sb.append((char) ('a' + (i * 7 + i / 26) % 26));
        }
        String big = sb.toString();
        assertEquals(64 * 1024, big.length());
        ackWithDelta(p, "kv-big", 1, List.of(set(100, "payload", big)));

        Optional<String> value = kv(p, "kv-big", "payload");
        assertTrue(value.isPresent(), "the large value is stored");
        assertEquals(big.length(), value.get().length(), "length of the large value");
        assertEquals(big, value.get(), "the large value round-trips exactly");
    }

    /** Keys with spaces, non-Latin scripts, emoji, dots and slashes round-trip. */
    @Test
    void test_kv_special_chars_in_key() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-chars");
        Map<String, String> entries = new LinkedHashMap<>();
        entries.put("key with spaces", "v1");
        entries.put("日本語キー", "v2");
        entries.put("dotted.key.name", "v3");
        entries.put("path/like/key", "v4");
        entries.put("emoji🎉key", "v5");
        List<Event> delta = new ArrayList<>();
        long eventId = 100;
        for (Map.Entry<String, String> e : entries.entrySet()) {
            delta.add(set(eventId++, e.getKey(), e.getValue()));
        }
        ackWithDelta(p, "kv-chars", 1, delta);

        for (Map.Entry<String, String> e : entries.entrySet()) {
            assertEquals(Optional.of(e.getValue()), kv(p, "kv-chars", e.getKey()), "key '" + e.getKey() + "'");
        }
        assertEquals(entries, kvAll(p, "kv-chars"), "all keys, spelled exactly");
    }

    /** An instance without key-value data has an empty snapshot. */
    @Test
    void test_kv_snapshot_empty() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-sempty");

        assertEquals(Map.of(), fetchSnapshot(p, "kv-sempty", 1));
    }

    /** A set in execution 1 (merged at continue-as-new) is in execution 2's snapshot; execution 2's set is not. */
    @Test
    void test_kv_snapshot_cross_execution() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-scross");
        ackWithDelta(p, "kv-scross", 1, List.of(set(100, "A", "from_exec1")));
        continueAsNew(p, "kv-scross", 2);
        ackWithDelta(p, "kv-scross", 2, List.of(set(200, "B", "from_exec2")));

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-scross", 2);
        assertEquals(1, snapshot.size(), "only state of earlier executions: " + snapshot);
        assertEquals("from_exec1", snapValue(snapshot, "A"));
        assertFalse(snapshot.containsKey("B"), "the current execution's key is not in the snapshot");
        assertEquals(Optional.of("from_exec2"), kv(p, "kv-scross", "B"), "but clients see it");
    }

    /** keepLast=1 on a single-execution instance prunes nothing and the key stays. */
    @Test
    void test_kv_prune_current_execution_protected() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-prncur");
        ackWithDelta(p, "kv-prncur", 1, List.of(set(100, "alive", "yes")));

        PruneResult result = admin.pruneExecutions("kv-prncur", keepLast(1));
        assertEquals(0, result.executionsDeleted(), "the current execution is never pruned: " + result);
        assertEquals(Optional.of("yes"), kv(p, "kv-prncur", "alive"));
    }

    /** Deleting a parent removes the key-value data of its child too. */
    @Test
    void test_kv_delete_instance_with_children() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-parent");
        ackWithDelta(p, "kv-parent", 1, List.of(set(100, "parent_key", "parent_val")));

        p.enqueueForOrchestrator(new WorkItem.StartOrchestration("kv-child", TEST_ORCH, "{}", TEST_VERSION,
                "kv-parent", 1L, 1), null);
        FetchedOrchestration child = fetchOrchRequired(p, "the start of the child");
        assertEquals("kv-child", child.item().instance());
        ack(p, child.lockToken(), 1, List.of(Events.of(1, Events.ORCHESTRATION_STARTED, "name", TEST_ORCH,
                        "version", TEST_VERSION, "input", "{}", "parent_instance", "kv-parent", "parent_id", 1L)),
                testOrchMetadata().withParentInstanceId("kv-parent"));
        ackWithDelta(p, "kv-child", 1, List.of(set(100, "child_key", "child_val")));

        completeExecution(p, "kv-child", 1);
        completeExecution(p, "kv-parent", 1);
        assertEquals(Optional.of("parent_val"), kv(p, "kv-parent", "parent_key"));
        assertEquals(Optional.of("child_val"), kv(p, "kv-child", "child_key"));

        admin.deleteInstance("kv-parent", false);
        assertEquals(Optional.empty(), kv(p, "kv-parent", "parent_key"), "the parent's data is removed");
        assertEquals(Optional.empty(), kv(p, "kv-child", "child_key"), "the child's data is removed with it");
    }

    /** Clear-all on one instance leaves another instance's identical key alone. */
    @Test
    void test_kv_clear_isolation() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-ciso-a");
        createInstance(p, "kv-ciso-b");
        ackWithDelta(p, "kv-ciso-a", 1, List.of(set(100, "shared", "from_a")));
        ackWithDelta(p, "kv-ciso-b", 1, List.of(set(100, "shared", "from_b")));

        ackWithDelta(p, "kv-ciso-a", 1, List.of(Events.keyValuesCleared(101)));
        assertEquals(Optional.empty(), kv(p, "kv-ciso-a", "shared"), "cleared on A");
        assertEquals(Optional.of("from_b"), kv(p, "kv-ciso-b", "shared"), "B is untouched");
    }

    /** A value of the still-running execution is visible to clients but not in the fetch snapshot. */
    @Test
    void test_kv_delta_snapshot_excludes_current_execution() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-ds1");
        ackWithDelta(p, "kv-ds1", 1, List.of(set(100, "counter", "1", 100)));
        assertEquals(Optional.of("1"), kv(p, "kv-ds1", "counter"), "clients see the current execution's value");

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-ds1", 1);
        assertEquals(Map.of(), snapshot, "the snapshot holds earlier executions only (replay rebuilds the rest)");
    }

    /** After continue-as-new, execution 2's snapshot has execution 1's counter. */
    @Test
    void test_kv_delta_snapshot_includes_completed_execution() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-ds2");
        ackWithDelta(p, "kv-ds2", 1, List.of(set(100, "counter", "5", 100)));
        continueAsNew(p, "kv-ds2", 2);

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-ds2", 2);
        assertTrue(snapshot.containsKey("counter"), "execution 1's key is in the snapshot: " + snapshot);
        assertEquals("5", snapValue(snapshot, "counter"));
    }

    /** Store {color=red, size=large} overlaid by delta {color=blue, shape=circle}. */
    @Test
    void test_kv_delta_client_reads_merged() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-dm");
        ackWithDelta(p, "kv-dm", 1, List.of(set(100, "color", "red", 100), set(101, "size", "large", 101)));
        completeExecution(p, "kv-dm", 1);

        ackWithDelta(p, "kv-dm", 2, List.of(startedEvent(1), set(200, "color", "blue", 200),
                set(201, "shape", "circle", 201)));

        assertEquals(Optional.of("blue"), kv(p, "kv-dm", "color"), "the delta overrides the store");
        assertEquals(Optional.of("large"), kv(p, "kv-dm", "size"), "a stored key without delta is visible");
        assertEquals(Optional.of("circle"), kv(p, "kv-dm", "shape"), "a delta-only key is visible");
        assertEquals(Map.of("color", "blue", "size", "large", "shape", "circle"), kvAll(p, "kv-dm"));
    }

    /** Clearing a stored key in the current execution hides it from clients. */
    @Test
    void test_kv_delta_tombstone_overrides_store() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-dt");
        ackWithDelta(p, "kv-dt", 1, List.of(set(100, "temp", "exists", 100)));
        completeExecution(p, "kv-dt", 1);
        assertEquals(Optional.of("exists"), kv(p, "kv-dt", "temp"), "stored by the completion");

        ackWithDelta(p, "kv-dt", 2, List.of(startedEvent(1), Events.keyValueCleared(200, "temp")));
        assertEquals(Optional.empty(), kv(p, "kv-dt", "temp"), "the tombstone hides the stored value");
        assertEquals(Map.of(), kvAll(p, "kv-dt"));
    }

    /** Clear-all then set c in the current execution: stored a and b are hidden, c is visible. */
    @Test
    void test_kv_delta_clear_all_tombstones_store() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-dca");
        ackWithDelta(p, "kv-dca", 1, List.of(set(100, "a", "1", 100), set(101, "b", "2", 101)));
        completeExecution(p, "kv-dca", 1);

        ackWithDelta(p, "kv-dca", 2, List.of(startedEvent(1), Events.keyValuesCleared(200),
                set(201, "c", "3", 201)));
        assertEquals(Optional.empty(), kv(p, "kv-dca", "a"), "clear-all hides stored key a");
        assertEquals(Optional.empty(), kv(p, "kv-dca", "b"), "clear-all hides stored key b");
        assertEquals(Optional.of("3"), kv(p, "kv-dca", "c"), "a key set after the clear-all is visible");
        assertEquals(Map.of("c", "3"), kvAll(p, "kv-dca"));
    }

    /** After completion the value is still readable (now from the store, as the snapshot shows). */
    @Test
    void test_kv_delta_merged_on_completion() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-dmc");
        ackWithDelta(p, "kv-dmc", 1, List.of(set(100, "result", "42", 100)));
        completeExecution(p, "kv-dmc", 1);

        assertEquals(Optional.of("42"), kv(p, "kv-dmc", "result"), "readable after the merge");
        assertEquals(new KvEntry("42", 100), fetchSnapshot(p, "kv-dmc", 1).get("result"),
                "the completion merged the value into the store");
    }

    /** Execution 1 sets version=1 and progress 50% then 100%; after continue-as-new the snapshot has the latest. */
    @Test
    void test_kv_delta_merged_on_can() {
        OrchestrationProvider p = newProvider();
        createInstance(p, "kv-dmc2");
        ackWithDelta(p, "kv-dmc2", 1, List.of(set(100, "version", "1", 100), set(101, "progress", "50%", 101)));
        ackWithDelta(p, "kv-dmc2", 1, List.of(set(102, "progress", "100%", 102)));
        continueAsNew(p, "kv-dmc2", 2);

        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-dmc2", 2);
        assertEquals(new KvEntry("1", 100), snapshot.get("version"), "version carried over: " + snapshot);
        assertEquals(new KvEntry("100%", 102), snapshot.get("progress"), "the latest progress: " + snapshot);
        assertEquals(2, snapshot.size(), "snapshot: " + snapshot);
    }

    /** Force-deleting a running instance also removes its current-execution (delta) values. */
    @Test
    void test_kv_delta_delete_instance_cascades() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-ddel");
        ackWithDelta(p, "kv-ddel", 1, List.of(set(100, "data", "important", 100)));
        assertEquals(Optional.of("important"), kv(p, "kv-ddel", "data"));

        admin.deleteInstance("kv-ddel", true);
        assertEquals(Optional.empty(), kv(p, "kv-ddel", "data"), "delta values are removed with the instance");
        assertEquals(Map.of(), kvAll(p, "kv-ddel"));
    }

    /** A key written only by execution 1 of a 3-execution chain survives pruning executions 1 and 2. */
    @Test
    void test_kv_delta_prune_untouched_key_survives() {
        OrchestrationProvider p = newProvider();
        ProviderAdmin admin = admin(p);
        createInstance(p, "kv-dprn");
        ackWithDelta(p, "kv-dprn", 1, List.of(set(100, "stale_config", "from_exec_1", 100)));
        continueAsNew(p, "kv-dprn", 2);
        ackWithDelta(p, "kv-dprn", 2, List.of(set(200, "other", "unrelated", 200)));
        continueAsNew(p, "kv-dprn", 3);
        assertEquals(Optional.of("from_exec_1"), kv(p, "kv-dprn", "stale_config"));
        assertEquals(Optional.of("unrelated"), kv(p, "kv-dprn", "other"));

        PruneResult result = admin.pruneExecutions("kv-dprn", keepLast(1));
        assertEquals(2, result.executionsDeleted(), "executions 1 and 2 are pruned: " + result);
        assertEquals(List.of(3L), admin.listExecutions("kv-dprn"));

        assertEquals(Optional.of("from_exec_1"), kv(p, "kv-dprn", "stale_config"),
                "a key of a pruned execution survives (instance-scoped)");
        assertEquals(Optional.of("unrelated"), kv(p, "kv-dprn", "other"), "execution 2's key survives too");
        Map<String, KvEntry> snapshot = fetchSnapshot(p, "kv-dprn", 3);
        assertEquals("from_exec_1", snapValue(snapshot, "stale_config"),
                "the snapshot has the untouched key: " + snapshot);
        assertEquals("unrelated", snapValue(snapshot, "other"),
                "the snapshot has execution 2's key: " + snapshot);
    }
}
