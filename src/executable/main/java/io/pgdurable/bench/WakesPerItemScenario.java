package io.pgdurable.bench;

import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Thundering herd check: many worker dispatchers wait, items arrive one at a time. Long mode: waiters woken per item
 * (the long poller's wake count); short mode: every poll is a wake-up, so fetch calls per item. Both: server
 * statements per item, and the pickup latency from enqueue return to fetch return.
 */
final class WakesPerItemScenario extends PairedScenario {
    static final int WAITERS = 64;
    private static final Duration LOCK = Duration.ofMinutes(10);

    @Override
    public String name() {
        return "wakes-per-item";
    }

    @Override
    public String title() {
        return "Waiters woken per item with " + WAITERS + " parked";
    }

    @Override
    String description() {
        return WAITERS + " worker dispatchers wait; items are enqueued one at a time (the next one 5-15 ms after "
                + "the previous was acked). Long: wakes handed out by the long poller per item; short: fetch calls "
                + "per item (each poll wakes a dispatcher). Statements per item are counted on the server.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("waiters", WAITERS);
        m.put("items", p.wakesPerItemItems());
        m.put("gapMillis", List.of(5, 15));
        return m;
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        int items = ctx.profile().wakesPerItemItems();
        ServerStatementCounter counter = ctx.counter();
        AtomicLong fetchCalls = new AtomicLong();
        BlockingQueue<Long> acked = new ArrayBlockingQueue<>(WAITERS);
        LatencyRecorder pickup = new LatencyRecorder();
        Workers dispatchers = new Workers();
        ModeResult r = new ModeResult(mode);
        try (Hub hub = ctx.hub(name(), mode, 8);
             Workers.Stopping stopFirst = dispatchers.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            dispatchers.start("wpi-work", WAITERS, i -> () -> {
                fetchCalls.incrementAndGet();
                Optional<FetchedWorkItem> f = mode.pollWork(p, LOCK);
                if (f.isPresent()) {
                    long at = System.nanoTime();
                    p.ackWorkItem(f.get().lockToken(), null);
                    acked.put(at);
                }
            });
            if (mode == Mode.LONG && !hub.awaitParked(WAITERS, 20_000)) {
                throw new IllegalStateException("only " + hub.waiting() + " of " + WAITERS + " fetches parked");
            }
            Pause.sleep(300);
            long wakes0 = hub.wakesIssued();
            long calls0 = fetchCalls.get();
            boolean both = counter.source() == ServerStatementCounter.Source.PG_STAT_STATEMENTS;
            long tx0 = both ? counter.transactions() : 0;
            long stmts0 = counter.total();
            Map<String, Long> signals0 = hub.signals().snapshot();
            for (int i = 0; i < items; i++) {
                p.enqueueForWorker(new WorkItem.ActivityExecute("wpi", 1, i, "Wpi", "{}"));
                long sent = System.nanoTime();
                Long at = acked.poll(40, TimeUnit.SECONDS);
                if (at == null) {
                    dispatchers.check();
                    throw new IllegalStateException("wakes-per-item: item " + i + " not fetched within 40 s");
                }
                pickup.recordNanos(at - sent);
                Pause.sleepRandom(5, 15);
                dispatchers.check();
            }
            long stmts = counter.total() - stmts0;
            long tx = both ? counter.transactions() - tx0 : -1;
            long wakes = hub.wakesIssued() - wakes0;
            long calls = fetchCalls.get() - calls0;
            Map<String, Long> signals = CountingSignals.delta(signals0, hub.signals().snapshot());
            dispatchers.stop();
            double perItem = mode == Mode.LONG ? (double) wakes / items : (double) calls / items;
            r.metric("wakesPerItem", perItem, "wakes/item", mode == Mode.LONG
                    ? "waiters woken per item (long poller wake count)"
                    : "fetch calls per item (every short poll wakes a dispatcher)");
            r.metric("statementsPerItem", (double) stmts / items, counter.source().unit() + "/item",
                    "server " + counter.source().unit() + " per item, enqueue and ack included");
            if (both) {
                r.metric("transactionsPerItem", (double) tx / items, "transactions/item",
                        "server transactions per item (pg_stat_database)");
            }
            r.latency("pickup", pickup);
            r.detail("fetchCalls", calls);
            r.detail("wakes", wakes);
            if (mode == Mode.LONG) {
                r.detail("longPollSignals", signals);
            }
        } finally {
            dispatchers.stop();
            dispatchers.join();
        }
        return r;
    }
}
