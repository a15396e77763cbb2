package io.pgdurable.bench;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Recovery after a crashed lease holder: a "crashing" worker leases an item with a short lease and never acks it;
 * a dispatcher that starts waiting right after the crash reclaims it. Latency = the dispatcher's clock when its fetch
 * returns the item minus the lease's end (the crashed claim's own {@code now}, read through the provider's clock,
 * plus the lease). One crash at a time, leases of random length so short polling's phase is spread.
 */
final class LeaseScenario extends PairedScenario {
    private static final Duration RECLAIM_LOCK = Duration.ofMinutes(10);
    private static final int LEASE_MIN_MS = 150;
    private static final int LEASE_MAX_MS = 200;

    @Override
    public String name() {
        return "lease";
    }

    @Override
    public String title() {
        return "Recovery after a crashed lease holder";
    }

    @Override
    String description() {
        return "A worker leases an item for " + LEASE_MIN_MS + "-" + LEASE_MAX_MS + " ms (random) and never acks it "
                + "(a crash); a dispatcher starts waiting right after and reclaims the item once the lease ends. "
                + "Latency = reclaim (fetch return) minus lease end. One crash at a time.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samples", p.leaseSamples());
        m.put("leaseMillis", List.of(LEASE_MIN_MS, LEASE_MAX_MS));
        return m;
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        int samples = ctx.profile().leaseSamples();
        LatencyRecorder reclaim = new LatencyRecorder();
        AtomicLong early = new AtomicLong();
        SynchronousQueue<Boolean> go = new SynchronousQueue<>();
        BlockingQueue<long[]> reclaimed = new ArrayBlockingQueue<>(2);
        Workers reclaimer = new Workers();
        try (Hub hub = ctx.hub(name(), mode, 4);
             Workers.Stopping stopFirst = reclaimer.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            reclaimer.start("lease-reclaim", 1, i -> () -> {
                if (go.poll(100, TimeUnit.MILLISECONDS) == null) {
                    return;
                }
                while (true) {
                    Optional<FetchedWorkItem> f = mode.pollWork(p, RECLAIM_LOCK);
                    if (f.isPresent()) {
                        long at = RecordingClock.nowMicros();
                        p.ackWorkItem(f.get().lockToken(), null);
                        reclaimed.put(new long[] {at, ((WorkItem.ActivityExecute) f.get().item()).id()});
                        return;
                    }
                    if (!reclaimer.running()) {
                        return;
                    }
                }
            });
            for (int i = 0; i < samples; i++) {
                p.enqueueForWorker(new WorkItem.ActivityExecute("lease", 1, i, "Lease", "{}"));
                int lease = LEASE_MIN_MS + ThreadLocalRandom.current().nextInt(LEASE_MAX_MS - LEASE_MIN_MS + 1);
                hub.clock().mark();
                Optional<FetchedWorkItem> crashed = p.fetchWorkItem(Duration.ofMillis(lease), Duration.ZERO, null,
                        TagFilter.defaultOnly());
                long leaseEnd = hub.clock().firstSinceMark() + lease;
                if (crashed.isEmpty()) {
                    throw new IllegalStateException("lease: the crashing worker found no item");
                }
                go.put(true);
                long[] got = reclaimed.poll(40, TimeUnit.SECONDS);
                if (got == null) {
                    reclaimer.check();
                    throw new IllegalStateException("lease: item " + i + " not reclaimed within 40 s");
                }
                if (got[1] != i) {
                    throw new IllegalStateException("lease: reclaimed item " + got[1] + ", expected " + i);
                }
                long latency = got[0] - leaseEnd * 1000L;
                if (latency < 0) {
                    early.incrementAndGet();
                }
                reclaim.recordMicros(latency);
                Pause.sleepRandom(20, 60);
            }
            reclaimer.stop();
        } finally {
            reclaimer.stop();
            reclaimer.join();
        }
        return new ModeResult(mode)
                .metric("earlyReclaims", early.get(), "items", "reclaimed before the lease ended")
                .latency("reclaim", reclaim);
    }
}
