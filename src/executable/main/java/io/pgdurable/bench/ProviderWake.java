package io.pgdurable.bench;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * pgdurable's side of the peers scenario's wakes: {@value #CONSUMERS} worker fetches parked by long polling on one
 * provider, and a writer in another JVM ({@link WakeProducer}: a provider with default settings, or a plain-SQL
 * writer) enqueueing one item at a time, each after the previous one was fetched. A sample is the consumer's
 * {@link System#nanoTime()} when its fetch returned minus the writer's when its call returned (after the commit): the
 * machine's monotonic clock, read in both processes.
 */
final class ProviderWake {
    static final int CONSUMERS = 4;
    private static final Duration LOCK = Duration.ofMinutes(10); // no lease ends inside the run
    private static final long FETCH_WAIT_SECONDS = 40;

    private ProviderWake() {}

    /** A series' samples (nanoseconds) and how its recorded fetches were woken (wake source → count). */
    record Series(List<Long> samples, java.util.Map<String, Long> wakeSources) {}

    /**
     * Runs {@code warmUp + jobs} items numbered from {@code base}, {@code minGapMs}-{@code maxGapMs} apart
     * (random), on the schema of {@code scenario}; returns the samples of all but the first {@code warmUp}. Fails
     * when an item is fetched twice, out of turn, or not within 40 s, or the queue is not empty afterwards.
     */
    static Series run(BenchContext ctx, String scenario, WakeProducer.Writer writer, int jobs, int warmUp,
                          long base, int minGapMs, int maxGapMs) throws Exception {
        BlockingQueue<long[]> fetched = new LinkedBlockingQueue<>();
        List<Long> samples = new ArrayList<>(jobs);
        Workers consumers = new Workers();
        String schema;
        java.util.Map<String, Long> before = null;
        java.util.Map<String, Long> sources = new java.util.TreeMap<>();
        try (Hub hub = ctx.hub(scenario, Mode.LONG, CONSUMERS + 2);
             WakeProducer producer = WakeProducer.start(ctx.url(), hub.schema());
             Workers.Stopping stopFirst = consumers.stopFirst()) {
            schema = hub.schema();
            OrchestrationProvider p = hub.provider();
            consumers.start("peers-wake", CONSUMERS, i -> () -> {
                Optional<FetchedWorkItem> f = Mode.LONG.pollWork(p, LOCK);
                if (f.isPresent()) {
                    long at = System.nanoTime();
                    p.ackWorkItem(f.get().lockToken(), null);
                    fetched.put(new long[] {((WorkItem.ActivityExecute) f.get().item()).id(), at});
                }
            });
            if (!hub.awaitParked(CONSUMERS, 10_000)) {
                throw new IllegalStateException("peers wake: the " + CONSUMERS + " consumers did not park within 10 s");
            }
            for (int k = 0; k < warmUp + jobs; k++) {
                if (!Pause.sleepRandom(minGapMs, maxGapMs)) {
                    throw new InterruptedException("peers wake interrupted");
                }
                consumers.check();
                long sent = producer.write(writer, base + k);
                long[] got = fetched.poll(FETCH_WAIT_SECONDS, TimeUnit.SECONDS);
                if (got == null) {
                    throw new IllegalStateException("peers wake: item " + k + " was not fetched within "
                            + FETCH_WAIT_SECONDS + " s");
                }
                if (got[0] != base + k) {
                    throw new AssertionError("peers wake: fetched item " + got[0] + " while waiting for " + (base + k));
                }
                if (k == warmUp) {
                    before = hub.signals().snapshot();
                }
                if (k >= warmUp) {
                    samples.add(got[1] - sent);
                }
            }
            consumers.stop();
            CountingSignals.delta(before, hub.signals().snapshot()).forEach((k, v) -> {
                if (k.startsWith("wakes.") && v > 0 && !k.equals("wakes.worker") && !k.equals("wakes.orchestrator")) {
                    sources.put(k.substring("wakes.".length()), v);
                }
            });
        } finally {
            consumers.stop();
            consumers.join();
        }
        if (!fetched.isEmpty()) {
            throw new AssertionError("peers wake: " + fetched.size() + " item(s) fetched more than once");
        }
        long left = DrainScenario.workerQueueRows(ctx.url(), schema);
        if (left > 0) {
            throw new AssertionError("peers wake: " + left + " item(s) left in the queue");
        }
        return new Series(samples, sources);
    }
}
