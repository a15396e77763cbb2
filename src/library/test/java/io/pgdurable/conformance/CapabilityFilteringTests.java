package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.spi.DispatcherCapabilityFilter;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.SemVer;
import io.pgdurable.spi.SemverRange;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code capability_filtering} (CONTRACT §7.15, §2.2, §4.5): a fetch filter selects instances by
 * the pinned runtime version of their current execution (unpinned = always compatible, only the first range counts,
 * an empty list matches nothing), the pin comes from ack metadata per execution, the filter is applied before
 * locking and before decoding history, and undecodable history is reported through {@code historyError} while
 * attempt counts keep growing and a poison ack can still be appended.
 */
public abstract class CapabilityFilteringTests extends ConformanceTestBase {

    /** The runtime's default poison threshold (max_attempts). */
    protected static final int POISON_THRESHOLD = 10;

    // ------------------------------------------------------------------ helpers

    /** A filter with the single inclusive range [min, max]. */
    protected static DispatcherCapabilityFilter range(String min, String max) {
        return DispatcherCapabilityFilter.of(new SemverRange(SemVer.parse(min), SemVer.parse(max)));
    }

    protected static Optional<FetchedOrchestration> fetchFiltered(OrchestrationProvider p, Duration lock,
                                                                  DispatcherCapabilityFilter filter) {
        Optional<FetchedOrchestration> r = p.fetchOrchestrationItem(lock, Duration.ZERO, filter);
        assertNotNull(r, "fetchOrchestrationItem returned null instead of an Optional");
        return r;
    }

    protected static Optional<FetchedOrchestration> fetchFiltered(OrchestrationProvider p,
                                                                  DispatcherCapabilityFilter filter) {
        return fetchFiltered(p, LONG_LOCK, filter);
    }

    /** A filtered fetch that must return {@code instance}. */
    protected static FetchedOrchestration fetchFilteredRequired(OrchestrationProvider p,
                                                                DispatcherCapabilityFilter filter, String instance,
                                                                String why) {
        Optional<FetchedOrchestration> r = fetchFiltered(p, filter);
        assertTrue(r.isPresent(), "expected " + instance + ": " + why);
        assertEquals(instance, r.get().item().instance(), why);
        return r.get();
    }

    protected static void assertNoFilteredItem(OrchestrationProvider p, DispatcherCapabilityFilter filter,
                                               String why) {
        fetchFiltered(p, filter).ifPresent(f -> fail("expected no item (" + why + ") but fetched '"
                + f.item().instance() + "' with " + f.item().messages()));
    }

    /** OrchestrationStarted (event 1) of "TestOrch" 1.0.0 written by a runtime of version {@code runtimeVersion}. */
    protected static Event startedBy(String runtimeVersion) {
        return Events.of(1, Events.ORCHESTRATION_STARTED, "name", TEST_ORCH, "version", TEST_VERSION, "input", "{}",
                "duroxide_version", runtimeVersion);
    }

    protected static WorkItem.ExternalRaised ping(String instance, String name) {
        return new WorkItem.ExternalRaised(instance, name, "{}");
    }

    /**
     * Creates {@code instance} with its first turn pinned to {@code pin} (null = unpinned) and, in the same ack, a
     * follow-up "ping" message so the instance has work waiting. Turns of other instances fetched on the way are
     * abandoned without counting the attempt.
     */
    protected static void seed(OrchestrationProvider p, String instance, String pin) {
        p.enqueueForOrchestrator(startItem(instance), null);
        List<String> others = new ArrayList<>();
        FetchedOrchestration mine = null;
        for (int i = 0; i < 100 && mine == null; i++) {
            FetchedOrchestration f = fetchOrchRequired(p, "the start of " + instance);
            if (f.item().instance().equals(instance)) {
                mine = f;
            } else {
                others.add(f.lockToken());
            }
        }
        assertNotNull(mine, "never fetched the start of " + instance);
        ExecutionMetadata metadata = testOrchMetadata();
        if (pin != null) {
            metadata = metadata.withPinnedVersion(SemVer.parse(pin));
        }
        ack(p, mine.lockToken(), 1, List.of(startedBy(pin == null ? "0.0.0" : pin)), List.of(),
                List.of(ping(instance, "ping")), metadata);
        for (String token : others) {
            p.abandonOrchestrationItem(token, null, true);
        }
    }

    protected static ProviderAdmin admin(OrchestrationProvider p) {
        Optional<ProviderAdmin> admin = p.asManagementCapability();
        assertTrue(admin != null && admin.isPresent(), "the provider must expose its management capability");
        return admin.get();
    }

    /** An unfiltered fetch that must return {@code instance} with a history error and no history. */
    protected static FetchedOrchestration fetchWithHistoryError(OrchestrationProvider p, Duration lock,
                                                                String instance, String why) {
        Optional<FetchedOrchestration> r = fetchFiltered(p, lock, null);
        assertTrue(r.isPresent(), why + ": a corrupted instance must still be returned, not skipped");
        OrchestrationItem item = r.get().item();
        assertEquals(instance, item.instance(), why);
        assertNotNull(item.historyError(), why + ": historyError must be an Optional");
        assertTrue(item.historyError().isPresent(), why + ": historyError must be set for undecodable history");
        assertFalse(item.historyError().get().isBlank(), why + ": historyError must say something");
        assertEquals(List.of(), item.history(), why + ": history is empty when it cannot be decoded");
        return r.get();
    }

    // ------------------------------------------------------------------ filter basics

    /** No filter (admin / drain mode) returns a pinned instance. */
    @Test
    void test_fetch_with_filter_none_returns_any_item() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-1", "1.2.3");
        Optional<FetchedOrchestration> r = fetchFiltered(p, null);
        assertTrue(r.isPresent(), "no filter returns a pinned instance");
        assertEquals("inst-1", r.get().item().instance());
        assertEquals(1, r.get().item().messages().size());
        assertEquals("ping", assertInstanceOf(WorkItem.ExternalRaised.class, r.get().item().messages().get(0)).name());
    }

    /** A pin inside the range is returned. */
    @Test
    void test_fetch_with_compatible_filter_returns_item() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-2", "1.2.3");
        FetchedOrchestration f = fetchFilteredRequired(p, range("1.0.0", "1.9.9"), "inst-2",
                "1.2.3 lies in [1.0.0, 1.9.9]");
        assertEquals(1, f.item().history().size(), "the compatible item carries its history");
    }

    /** A pin outside the range is skipped, and the work stays queued. */
    @Test
    void test_fetch_with_incompatible_filter_skips_item() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-3", "1.2.3");
        assertNoFilteredItem(p, range("2.0.0", "2.9.9"), "1.2.3 lies outside [2.0.0, 2.9.9]");
        assertEquals("inst-3", fetchOrchRequired(p, "the skipped work is still there").item().instance());
    }

    /** With v1 and v2 instances queued, each filter gets its own instance. */
    @Test
    void test_fetch_filter_skips_incompatible_selects_compatible() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-v1", "1.0.0");
        seed(p, "inst-v2", "2.0.0");

        FetchedOrchestration v2 = fetchFilteredRequired(p, range("2.0.0", "2.9.9"), "inst-v2",
                "a v2 filter passes over the older v1 instance");
        p.abandonOrchestrationItem(v2.lockToken(), null, true);
        fetchFilteredRequired(p, range("1.0.0", "1.9.9"), "inst-v1", "a v1 filter returns the v1 instance");
    }

    /** An excluding fetch neither locks nor counts an attempt on the skipped instance. */
    @Test
    void test_fetch_filter_does_not_lock_skipped_instances() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-5", "1.0.0");
        assertEquals(0, factory.getMaxAttemptCount("inst-5"), "the ping has not been fetched yet");

        assertNoFilteredItem(p, range("2.0.0", "2.9.9"), "1.0.0 is excluded");
        assertEquals(0, factory.getMaxAttemptCount("inst-5"), "a filtered-out instance's attempts are not counted");

        FetchedOrchestration f = fetchFilteredRequired(p, range("0.0.0", "1.9.9"), "inst-5",
                "the excluding fetch must not have locked the instance");
        assertEquals(1, f.attemptCount(), "the compatible fetch is the first real attempt");
    }

    /** An execution without a pin matches any filter. */
    @Test
    void test_fetch_filter_null_pinned_version_always_compatible() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-null", null);
        fetchFilteredRequired(p, range("99.0.0", "99.9.9"), "inst-null", "an unpinned execution matches any filter");
    }

    /** Both range bounds are inclusive; the next version above the range is excluded. */
    @Test
    void test_fetch_filter_boundary_versions() {
        OrchestrationProvider p = newProvider();
        DispatcherCapabilityFilter filter = range("1.0.0", "1.9.99");

        seed(p, "v1-low", "1.0.0");
        FetchedOrchestration low = fetchFilteredRequired(p, filter, "v1-low", "the lower bound is inclusive");
        ackEmpty(p, low.lockToken(), 1);

        seed(p, "v1-high", "1.9.99");
        FetchedOrchestration high = fetchFilteredRequired(p, filter, "v1-high", "the upper bound is inclusive");
        ackEmpty(p, high.lockToken(), 1);

        OrchestrationProvider p2 = newProvider();
        seed(p2, "v2-exact", "2.0.0");
        assertNoFilteredItem(p2, filter, "2.0.0 is just above [1.0.0, 1.9.99]");
        FetchedOrchestration v2 = fetchOrchRequired(p2, "2.0.0 without a filter");
        assertEquals("v2-exact", v2.item().instance());
        seed(p2, "v1-patch-above", "1.9.100");
        assertNoFilteredItem(p2, filter, "1.9.100 is just above [1.0.0, 1.9.99]");
    }

    // ------------------------------------------------------------------ where the pin comes from

    /** The pin is exactly the version the ack metadata carried. */
    @Test
    void test_pinned_version_stored_via_ack_metadata() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-8", "3.1.4");
        assertNoFilteredItem(p, range("3.1.5", "3.9.9"), "the pin is 3.1.4, below 3.1.5");
        assertNoFilteredItem(p, range("1.0.0", "3.1.3"), "the pin is 3.1.4, above 3.1.3");
        fetchFilteredRequired(p, range("3.1.4", "3.1.4"), "inst-8", "the pin is exactly 3.1.4");
    }

    /** A later ack without a pin leaves the stored pin unchanged. */
    @Test
    void test_pinned_version_immutable_across_ack_cycles() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-9", "1.0.0");
        DispatcherCapabilityFilter filter = range("0.0.0", "1.9.9");

        FetchedOrchestration turn = fetchFilteredRequired(p, filter, "inst-9", "the second turn");
        ack(p, turn.lockToken(), 1, List.of(Events.externalEvent(2, "ping", "{}")), testOrchMetadata());
        p.enqueueForOrchestrator(ping("inst-9", "ping2"), null);

        assertNoFilteredItem(p, range("2.0.0", "2.9.9"),
                "an ack without a pin keeps 1.0.0 (it must not clear it to 'unpinned')");
        fetchFilteredRequired(p, filter, "inst-9", "the pin survives later acks");
    }

    /** After continue-as-new the new execution is filtered by its own pin, not its predecessor's. */
    @Test
    void test_continue_as_new_execution_gets_own_pinned_version() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-can", "1.0.0");

        FetchedOrchestration turn = fetchFilteredRequired(p, range("0.0.0", "1.9.9"), "inst-can", "execution 1");
        ack(p, turn.lockToken(), 1, List.of(Events.orchestrationContinuedAsNew(2, "{}")), List.of(),
                List.of(new WorkItem.ContinueAsNew("inst-can", TEST_ORCH, "{}", TEST_VERSION, List.of(), null)),
                testOrchMetadata().withStatus(ExecutionMetadata.CONTINUED_AS_NEW, "{}"));

        FetchedOrchestration can = fetchOrchRequired(p, "the ContinueAsNew message");
        assertEquals("inst-can", can.item().instance());
        ack(p, can.lockToken(), 2, List.of(startedBy("2.0.0")), List.of(), List.of(),
                testOrchMetadata().withPinnedVersion(SemVer.parse("2.0.0")));
        p.enqueueForOrchestrator(ping("inst-can", "ping"), null);

        FetchedOrchestration v2 = fetchFilteredRequired(p, range("2.0.0", "2.9.9"), "inst-can",
                "execution 2 is pinned 2.0.0");
        assertEquals(2, v2.item().executionId());
        p.abandonOrchestrationItem(v2.lockToken(), null, true);
        assertNoFilteredItem(p, range("1.0.0", "1.9.9"), "execution 2 does not inherit execution 1's pin");
    }

    // ------------------------------------------------------------------ edge cases

    /** An empty range list matches nothing and claims nothing. */
    @Test
    void test_filter_with_empty_supported_versions_returns_nothing() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-empty", "1.0.0");
        assertNoFilteredItem(p, new DispatcherCapabilityFilter(List.of()), "an empty range list supports nothing");
        assertEquals(0, factory.getMaxAttemptCount("inst-empty"), "nothing was claimed");
        assertEquals("inst-empty", fetchOrchRequired(p, "the work is still there").item().instance());
    }

    /** A second filtered fetch of a locked instance returns empty. */
    @Test
    void test_concurrent_filtered_fetch_no_double_lock() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-conc", "1.0.0");
        DispatcherCapabilityFilter filter = range("0.0.0", "1.9.9");
        fetchFilteredRequired(p, filter, "inst-conc", "the first filtered fetch");
        assertNoFilteredItem(p, filter, "the instance is locked by the first fetch");
        assertNoFilteredItem(peerProvider(), filter, "another node sees the lock too");
    }

    /** A pin can be back-filled by a later ack of an unpinned execution. */
    @Test
    void test_ack_stores_pinned_version_via_metadata_update() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-backfill", null);
        FetchedOrchestration f = fetchOrchRequired(p, "the unpinned instance's turn");
        assertEquals("inst-backfill", f.item().instance());
        ack(p, f.lockToken(), 1, List.of(), testOrchMetadata().withPinnedVersion(SemVer.parse("1.2.3")));
        p.enqueueForOrchestrator(ping("inst-backfill", "ping2"), null);

        assertNoFilteredItem(p, range("2.0.0", "2.9.9"), "the back-filled pin 1.2.3 now excludes v2 dispatchers");
        fetchFilteredRequired(p, range("1.0.0", "1.9.9"), "inst-backfill", "the back-filled pin is filterable");
    }

    /** A later ack with another pin overwrites the stored one. */
    @Test
    void test_provider_updates_pinned_version_when_told() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-update", "1.0.0");
        FetchedOrchestration f = fetchFilteredRequired(p, range("0.0.0", "1.9.9"), "inst-update", "the 1.0.0 turn");
        ack(p, f.lockToken(), 1, List.of(), testOrchMetadata().withPinnedVersion(SemVer.parse("2.0.0")));
        p.enqueueForOrchestrator(ping("inst-update", "ping2"), null);

        FetchedOrchestration v2 = fetchFilteredRequired(p, range("2.0.0", "2.0.0"), "inst-update",
                "the pin was overwritten with 2.0.0");
        p.abandonOrchestrationItem(v2.lockToken(), null, true);
        assertNoFilteredItem(p, range("1.0.0", "1.0.0"), "the old pin 1.0.0 no longer applies");
    }

    // ------------------------------------------------------------------ undecodable history

    /** Corrupted history: an excluding filter gives empty without error; no filter gives a historyError item. */
    @Test
    void test_fetch_corrupted_history_filtered_vs_unfiltered() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-corrupt-39", "1.0.0");
        factory.corruptInstanceHistory("inst-corrupt-39");

        assertNoFilteredItem(p, range("2.0.0", "2.9.9"), "the excluded corrupted instance: empty, no error");
        assertEquals(0, factory.getMaxAttemptCount("inst-corrupt-39"), "the excluded instance was not claimed");

        FetchedOrchestration f = fetchWithHistoryError(p, LONG_LOCK, "inst-corrupt-39", "the unfiltered fetch");
        assertEquals(1, f.attemptCount());
        assertEquals(1, f.item().messages().size(), "the messages are still delivered");
        p.abandonOrchestrationItem(f.lockToken(), null, true);
    }

    /** Every re-fetch of a corrupted instance (after lock expiry or abandon) counts another attempt. */
    @Test
    void test_fetch_deserialization_error_increments_attempt_count() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        String id = "inst-deser-41";
        seed(p, id, "1.0.0");
        factory.corruptInstanceHistory(id);
        Duration shortLock = Duration.ofMillis(400);

        FetchedOrchestration first = fetchWithHistoryError(p, shortLock, id, "the first fetch");
        long lockedAt = now();
        assertEquals(1, first.attemptCount());
        assertNoOrchItem(p, "the history-error item is locked like any other until its lock expires");

        sleepUntil(lockedAt, shortLock.plus(EXPIRY_MARGIN));
        FetchedOrchestration second = fetchWithHistoryError(p, shortLock, id, "the fetch after the lock expired");
        assertEquals(2, second.attemptCount(), "lock expiry and re-fetch count a new attempt");
        assertEquals(2, factory.getMaxAttemptCount(id));

        p.abandonOrchestrationItem(second.lockToken(), null, false);
        FetchedOrchestration third = fetchWithHistoryError(p, shortLock, id, "the fetch after an abandon");
        assertEquals(3, third.attemptCount(), "a counted abandon and re-fetch count a new attempt");
        assertEquals(3, factory.getMaxAttemptCount(id));
        p.abandonOrchestrationItem(third.lockToken(), null, false);
    }

    /** Fetch / abandon / expire cycles on corrupted history drive the attempt count past the poison threshold. */
    @Test
    void test_fetch_deserialization_error_eventually_reaches_poison() throws InterruptedException {
        OrchestrationProvider p = newProvider();
        String id = "inst-poison-42";
        seed(p, id, "1.0.0");
        factory.corruptInstanceHistory(id);
        Duration shortLock = Duration.ofMillis(150);

        for (int attempt = 1; attempt <= POISON_THRESHOLD; attempt++) {
            FetchedOrchestration f = fetchWithHistoryError(p, shortLock, id, "fetch #" + attempt);
            long lockedAt = now();
            assertEquals(attempt, f.attemptCount(), "fetch #" + attempt);
            assertEquals(attempt, factory.getMaxAttemptCount(id), "stored attempt count after fetch #" + attempt);
            if (attempt % 2 == 1) {
                p.abandonOrchestrationItem(f.lockToken(), null, false);
            } else {
                sleepUntil(lockedAt, shortLock.plus(EXPIRY_MARGIN));
            }
        }
        assertTrue(factory.getMaxAttemptCount(id) >= POISON_THRESHOLD, "the stored count reached the threshold");

        FetchedOrchestration over = fetchWithHistoryError(p, LONG_LOCK, id, "the fetch past the threshold");
        assertEquals(POISON_THRESHOLD + 1, over.attemptCount(),
                "the runtime sees an attempt count above max_attempts and poisons the instance");
        p.abandonOrchestrationItem(over.lockToken(), null, true);
    }

    /** The filter excludes a corrupted instance before its history is decoded. */
    @Test
    void test_fetch_filter_applied_before_history_deserialization() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-order-43", "99.0.0");
        factory.corruptInstanceHistory("inst-order-43");

        assertNoFilteredItem(p, range("1.0.0", "2.0.0"), "99.0.0 is excluded before any history is decoded");
        assertEquals(0, factory.getMaxAttemptCount("inst-order-43"), "the excluded instance was not claimed");

        FetchedOrchestration f = fetchWithHistoryError(p, LONG_LOCK, "inst-order-43", "the unfiltered fetch");
        p.abandonOrchestrationItem(f.lockToken(), null, true);
    }

    /** Only the first range of the filter is applied. */
    @Test
    void test_fetch_single_range_only_uses_first_range() {
        OrchestrationProvider p = newProvider();
        seed(p, "inst-range-a", "1.0.0");
        seed(p, "inst-range-b", "3.0.0");
        DispatcherCapabilityFilter filter = DispatcherCapabilityFilter.of(
                new SemverRange(SemVer.parse("1.0.0"), SemVer.parse("1.5.0")),
                new SemverRange(SemVer.parse("3.0.0"), SemVer.parse("3.5.0")));

        FetchedOrchestration a = fetchFilteredRequired(p, filter, "inst-range-a", "the first range matches 1.0.0");
        assertNoFilteredItem(p, filter, "3.0.0 is only in the second range, which is ignored");
        p.abandonOrchestrationItem(a.lockToken(), null, true);
        FetchedOrchestration again = fetchFilteredRequired(p, filter, "inst-range-a",
                "only the first-range instance is ever returned");
        ackEmpty(p, again.lockToken(), 1);
        assertNoFilteredItem(p, filter, "3.0.0 stays excluded once the 1.0.0 work is done");
        assertEquals("inst-range-b", fetchOrchRequired(p, "the 3.0.0 work is waiting").item().instance());
    }

    /** A poison ack (OrchestrationFailed at event 99999) is appended to corrupted history and marks it Failed. */
    @Test
    void test_ack_appends_event_to_corrupted_history() {
        OrchestrationProvider p = newProvider();
        String id = "inst-ack-corrupt-45";
        seed(p, id, "1.0.0");
        factory.corruptInstanceHistory(id);

        FetchedOrchestration f = fetchWithHistoryError(p, LONG_LOCK, id, "the fetch of the corrupted instance");
        OrchestrationItem item = f.item();
        String error = item.historyError().orElseThrow();
        String output = "poison: orchestration " + id + " execution " + item.executionId()
                + " history deserialization failed: " + error;
        Event failed = Events.orchestrationFailed(99999, output);

        ack(p, f.lockToken(), item.executionId(), List.of(failed), ExecutionMetadata.of(item.orchestrationName(),
                item.version()).withStatus(ExecutionMetadata.FAILED, output));

        ProviderAdmin admin = admin(p);
        ProviderAdmin.InstanceInfo info = admin.getInstanceInfo(id);
        assertEquals("Failed", info.status(), "the poison ack marks the execution Failed");
        assertTrue(info.output().isPresent() && info.output().get().contains("deserialization failed"),
                "the output carries the deserialization error, was " + info.output());
        assertEquals(2, admin.getExecutionInfo(id, item.executionId()).eventCount(),
                "the corrupted event stays and the failure event is appended");
        assertNoOrchItem(p, "the poison ack consumed the batch");
    }
}
