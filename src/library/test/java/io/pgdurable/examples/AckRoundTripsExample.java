package io.pgdurable.examples;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** The README's round-trip saving example, compiled and run by {@link ReadmeExamplesTest}. */
public final class AckRoundTripsExample {
    private AckRoundTripsExample() {}

    /** Acks one item and leases the next in one call, then acks a fetched batch in one call; returns the results. */
    public static List<AckResult> run(PostgresProvider provider) {
        List<WorkItem> work = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            work.add(new WorkItem.ActivityExecute("order-8", 1, i, "Pack", "{}"));
        }
        provider.enqueueAllForWorker(work);
        FetchedWorkItem item = provider.fetchWorkItem(Duration.ofMinutes(5), Duration.ZERO, null,
                TagFilter.defaultOnly()).orElseThrow();
        WorkItem completion = new WorkItem.ActivityCompleted("order-8", 1, 1, "\"packed\"");
        // README:ack-round-trips:begin
        // A busy one-at-a-time worker: ack and lease the next item in one round trip (empty: nothing claimable now).
        Optional<FetchedWorkItem> next = provider.ackWorkItemAndFetchNext(item.lockToken(), completion,
                Duration.ofMinutes(5), null, TagFilter.defaultOnly());
        // README:ack-round-trips:end
        List<FetchedWorkItem> batch = new ArrayList<>(provider.fetchWorkItems(Duration.ofMinutes(5),
                WorkBatch.upTo(10), null, TagFilter.defaultOnly()));
        next.ifPresent(batch::add);
        // README:ack-list:begin
        // A consumer that fetched a batch acks it in one call, one result per ack (no thread per ack).
        List<WorkAck> acks = new ArrayList<>();
        for (FetchedWorkItem done : batch) {
            acks.add(new WorkAck(done.lockToken(), null));
        }
        List<AckResult> results = provider.ackWorkItems(acks);
        // README:ack-list:end
        return results;
    }
}
