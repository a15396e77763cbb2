package io.pgdurable.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Conformance module {@code tag_filtering} (CONTRACT §7.18, §4.4, §1.5): the worker fetch honours the tag filter
 * (DefaultOnly, Tags, DefaultAnd, Any, None), tags survive both enqueue paths and abandon/refetch, and runtimes with
 * different filters can share one queue.
 */
public abstract class TagFilteringTests extends ConformanceTestBase {

    // ------------------------------------------------------------------ module helpers

    /** Activity {@code id} named "Activity{id}" with {@code tag} (null = untagged). */
    protected static WorkItem.ActivityExecute taggedActivity(String instance, long id, String tag) {
        return new WorkItem.ActivityExecute(instance, 1, id, "Activity" + id, "{}", null, tag);
    }

    protected static Optional<FetchedWorkItem> fetchTagged(OrchestrationProvider p, TagFilter filter) {
        Optional<FetchedWorkItem> r = p.fetchWorkItem(LONG_LOCK, Duration.ZERO, null, filter);
        assertNotNull(r, "fetchWorkItem returned null instead of an Optional");
        return r;
    }

    /** Fetches with {@code filter} and checks the activity id and tag of what came back. */
    protected static FetchedWorkItem fetchTaggedExpected(OrchestrationProvider p, TagFilter filter, long expectedId,
                                                         String expectedTag, String why) {
        Optional<FetchedWorkItem> r = fetchTagged(p, filter);
        assertTrue(r.isPresent(), "expected a work item for " + filter + ": " + why);
        assertNotNull(r.get().lockToken(), "fetched work item has no lock token");
        WorkItem.ActivityExecute a = asActivity(r.get());
        assertEquals(expectedId, a.id(), "activity id for " + filter + " (" + why + ")");
        assertEquals(expectedTag, a.tag(), "tag for " + filter + " (" + why + ")");
        return r.get();
    }

    protected static void assertNothingTagged(OrchestrationProvider p, TagFilter filter, String why) {
        fetchTagged(p, filter).ifPresent(f -> fail("expected no work item for " + filter + " (" + why
                + ") but fetched " + f.item()));
    }

    // ------------------------------------------------------------------ tests

    /** DefaultOnly returns the untagged items 1 and 3 and never the gpu item. */
    @Test
    void test_default_only_fetches_untagged() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, null));
        p.enqueueForWorker(taggedActivity("inst-1", 2, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 3, null));

        fetchTaggedExpected(p, TagFilter.defaultOnly(), 1, null, "first untagged item");
        fetchTaggedExpected(p, TagFilter.defaultOnly(), 3, null, "second untagged item, skipping gpu");
        assertNothingTagged(p, TagFilter.defaultOnly(), "only the gpu item is left");
        fetchTaggedExpected(p, TagFilter.tags("gpu"), 2, "gpu", "the gpu item was left in the queue");
    }

    /** Tags{gpu} returns the gpu items 2 and 4 only. */
    @Test
    void test_tags_fetches_only_matching() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, null));
        p.enqueueForWorker(taggedActivity("inst-1", 2, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 3, "cpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 4, "gpu"));

        TagFilter gpu = TagFilter.tags("gpu");
        fetchTaggedExpected(p, gpu, 2, "gpu", "first gpu item");
        fetchTaggedExpected(p, gpu, 4, "gpu", "second gpu item");
        assertNothingTagged(p, gpu, "no gpu items are left");
    }

    /** DefaultAnd{gpu} returns the untagged item, then the gpu item, never the cpu item. */
    @Test
    void test_default_and_fetches_untagged_and_matching() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, null));
        p.enqueueForWorker(taggedActivity("inst-1", 2, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 3, "cpu"));

        TagFilter filter = TagFilter.defaultAnd("gpu");
        fetchTaggedExpected(p, filter, 1, null, "the untagged item first");
        fetchTaggedExpected(p, filter, 2, "gpu", "then the gpu item");
        assertNothingTagged(p, filter, "the cpu item does not match DefaultAnd{gpu}");
    }

    /** TagFilter.None returns nothing even though matching-anything items are queued. */
    @Test
    void test_none_filter_returns_nothing() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, null));
        p.enqueueForWorker(taggedActivity("inst-1", 2, "gpu"));

        assertNothingTagged(p, TagFilter.none(), "None never returns items");
        assertNothingTagged(p, TagFilter.none(), "None never returns items, asked again");
        fetchTaggedExpected(p, TagFilter.any(), 1, null, "the items are still queued and unlocked");
        fetchTaggedExpected(p, TagFilter.any(), 2, "gpu", "the items are still queued and unlocked");
    }

    /** Tags{gpu,tpu} returns gpu then tpu; cpu and untagged items are excluded. */
    @Test
    void test_multi_tag_filter() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 2, "tpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 3, "cpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 4, null));

        TagFilter filter = TagFilter.tags("gpu", "tpu");
        fetchTaggedExpected(p, filter, 1, "gpu", "the gpu item");
        fetchTaggedExpected(p, filter, 2, "tpu", "the tpu item");
        assertNothingTagged(p, filter, "cpu and untagged items do not match");
        fetchTaggedExpected(p, TagFilter.defaultOnly(), 4, null, "the untagged item is still there");
    }

    /** The tag and every other field of the activity survive enqueue and fetch. */
    @Test
    void test_tag_round_trip_preservation() {
        OrchestrationProvider p = newProvider();
        WorkItem.ActivityExecute item = taggedActivity("inst-1", 1, "gpu");
        p.enqueueForWorker(item);

        FetchedWorkItem f = fetchTaggedExpected(p, TagFilter.tags("gpu"), 1, "gpu", "the tagged item");
        WorkItem.ActivityExecute a = asActivity(f);
        assertEquals("Activity1", a.name());
        assertEquals(item, a, "the whole activity round-trips unchanged");
    }

    /** Any returns untagged, gpu and cpu items in FIFO order, then nothing. */
    @Test
    void test_any_filter_fetches_everything() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, null));
        p.enqueueForWorker(taggedActivity("inst-2", 2, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-3", 3, "cpu"));

        fetchTaggedExpected(p, TagFilter.any(), 1, null, "the untagged item");
        fetchTaggedExpected(p, TagFilter.any(), 2, "gpu", "the gpu item");
        fetchTaggedExpected(p, TagFilter.any(), 3, "cpu", "the cpu item");
        assertNothingTagged(p, TagFilter.any(), "everything was fetched");
    }

    /** An abandoned gpu item comes back with its tag, a new token and a higher attempt; DefaultOnly never sees it. */
    @Test
    void test_tag_survives_abandon_and_refetch() {
        OrchestrationProvider p = newProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-1", 2, null));

        TagFilter gpu = TagFilter.tags("gpu");
        FetchedWorkItem first = fetchTaggedExpected(p, gpu, 1, "gpu", "the gpu item");
        p.abandonWorkItem(first.lockToken(), null, false);

        FetchedWorkItem again = fetchTaggedExpected(p, gpu, 1, "gpu", "the abandoned gpu item, tag intact");
        assertTrue(again.attemptCount() >= 2, "the refetch counts as another attempt: " + again.attemptCount());
        assertNotEquals(first.lockToken(), again.lockToken(), "a new token after abandon");
        assertEquals(taggedActivity("inst-1", 1, "gpu"), asActivity(again), "the item is unchanged");

        p.abandonWorkItem(again.lockToken(), null, false);
        fetchTaggedExpected(p, TagFilter.defaultOnly(), 2, null, "DefaultOnly gets only the untagged item");
        assertNothingTagged(p, TagFilter.defaultOnly(), "the abandoned gpu item is not untagged now");
    }

    /** Runtimes with exclusive, overlapping and superset filters share one queue without stealing or duplicates. */
    @Test
    void test_multi_runtime_tag_isolation() {
        OrchestrationProvider p = newProvider();
        OrchestrationProvider defaultRuntime = p;
        OrchestrationProvider gpuCpuRuntime = peerProvider();
        OrchestrationProvider cpuFpgaRuntime = peerProvider();
        OrchestrationProvider anyRuntime = peerProvider();
        p.enqueueForWorker(taggedActivity("inst-1", 1, null));
        p.enqueueForWorker(taggedActivity("inst-2", 2, "gpu"));
        p.enqueueForWorker(taggedActivity("inst-3", 3, "cpu"));
        p.enqueueForWorker(taggedActivity("inst-4", 4, "fpga"));
        p.enqueueForWorker(taggedActivity("inst-5", 5, "gpu"));

        // Mutually exclusive with the tagged runtimes.
        fetchTaggedExpected(defaultRuntime, TagFilter.defaultOnly(), 1, null, "the only untagged item");
        assertNothingTagged(defaultRuntime, TagFilter.defaultOnly(), "no more untagged items");

        // Partial overlap: gpu+cpu takes the gpu and cpu items in FIFO order.
        TagFilter gpuCpu = TagFilter.tags("gpu", "cpu");
        fetchTaggedExpected(gpuCpuRuntime, gpuCpu, 2, "gpu", "first gpu/cpu item");
        fetchTaggedExpected(gpuCpuRuntime, gpuCpu, 3, "cpu", "second gpu/cpu item");

        // cpu+fpga: the cpu item is leased by the other runtime, so only fpga is left for it.
        TagFilter cpuFpga = TagFilter.tags("cpu", "fpga");
        fetchTaggedExpected(cpuFpgaRuntime, cpuFpga, 4, "fpga", "the fpga item");
        assertNothingTagged(cpuFpgaRuntime, cpuFpga, "cpu is leased and fpga consumed");

        // Superset: Any picks up the remaining gpu item only.
        fetchTaggedExpected(anyRuntime, TagFilter.any(), 5, "gpu", "the remaining gpu item");
        assertNothingTagged(anyRuntime, TagFilter.any(), "every item is leased");
        assertNothingTagged(gpuCpuRuntime, gpuCpu, "the second gpu item went to the Any runtime");
    }

    /** Activities scheduled through an orchestration ack keep their tag. */
    @Test
    void test_tag_preserved_through_ack_orchestration_item() {
        OrchestrationProvider p = newProvider();
        String instance = "tag-ack-inst";
        WorkItem.ActivityExecute gpuWork =
                new WorkItem.ActivityExecute(instance, 1, 10, "GpuWork", "\"model-v3\"", null, "gpu");
        WorkItem.ActivityExecute cpuWork =
                new WorkItem.ActivityExecute(instance, 1, 11, "CpuWork", "\"data\"", null, null);

        p.enqueueForOrchestrator(startItem(instance), null);
        FetchedOrchestration f = fetchOrchRequired(p, "the start");
        p.ackOrchestrationItem(f.lockToken(), 1, List.of(startedEvent(1)), List.of(gpuWork, cpuWork), List.of(),
                ExecutionMetadata.empty(), List.of());

        FetchedWorkItem untagged = fetchTaggedExpected(p, TagFilter.defaultOnly(), 11, null,
                "DefaultOnly gets the untagged activity");
        assertEquals(cpuWork, asActivity(untagged));
        p.ackWorkItem(untagged.lockToken(), null);
        assertNothingTagged(p, TagFilter.defaultOnly(), "the remaining activity is tagged gpu");

        FetchedWorkItem tagged = fetchTaggedExpected(p, TagFilter.tags("gpu"), 10, "gpu",
                "Tags{gpu} gets the tagged activity");
        assertEquals(gpuWork, asActivity(tagged), "the tagged activity round-trips through the ack unchanged");
    }
}
