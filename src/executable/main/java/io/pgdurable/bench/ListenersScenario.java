package io.pgdurable.bench;

import io.pgdurable.longpoll.ChannelListener;
import io.pgdurable.spi.WorkItem;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How the database's listeners weigh on pgdurable: PostgreSQL signals every listening backend of a database for every
 * NOTIFY, whatever its channel. With {@link #COUNTS} listening processes (this provider plus idle sessions that LISTEN,
 * half on the hub's channel and half on other channels, and read what they are sent), the scenario measures the wake
 * of the peers scenario (a writer in another JVM, {@value ProviderWake#CONSUMERS} parked fetches) and the enqueue
 * throughput of {@value #CLIENTS} clients of a long-polling provider (every enqueue announced).
 */
final class ListenersScenario implements Scenario {
    /** Listening processes on the database, the hub's own provider included. */
    static final List<Integer> COUNTS = List.of(1, 16, 64);
    static final int CLIENTS = 4;
    private static final long BASE = 9_000_000L;

    @Override
    public String name() {
        return "listeners";
    }

    @Override
    public String title() {
        return "Many listening processes on one database";
    }

    private static String description(int wakeJobs) {
        return "For " + COUNTS + " listening processes on the database: the hub's long-polling provider plus idle "
                + "sessions that LISTEN (half on the hub's channel with its listener lock, as another long-polling "
                + "process of the hub would, half on channels of their own) and read what arrives. Per count, on a "
                + "fresh schema: wake = "
                + wakeJobs + " jobs written one at a time 5-25 ms apart by a provider with default settings in "
                + "another JVM, " + ProviderWake.CONSUMERS + " fetches parked (as the peers scenario's wake); "
                + "enqueue = " + CLIENTS + " clients of the long-polling provider enqueueing flat out, each enqueue "
                + "announced (NOTIFY) to the other listeners of the hub. Counts run in the order above and then back.";
    }

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        long start = System.nanoTime();
        Profile prof = ctx.profile();
        int jobs = prof.quick() ? 10 : 300;
        Map<Integer, LatencyRecorder> wakes = new LinkedHashMap<>();
        Map<Integer, List<Double>> rates = new LinkedHashMap<>();
        for (int n : COUNTS) {
            wakes.put(n, new LatencyRecorder());
            rates.put(n, new ArrayList<>());
        }
        List<Integer> order = new ArrayList<>(COUNTS);
        for (int i = COUNTS.size() - 1; i >= 0 && !prof.quick(); i--) {
            order.add(COUNTS.get(i));
        }
        int phase = 0;
        for (int n : order) {
            phase++;
            String run = "listeners" + phase;
            String schema = ctx.schema(run, Mode.LONG);
            ProviderWake.Series s;
            long read;
            try (IdleListeners idle = IdleListeners.open(ctx.url(), hubChannel(schema), n - 1)) {
                s = ProviderWake.run(ctx, run, WakeProducer.Writer.PROVIDER, jobs, Math.max(2, jobs / 10),
                        BASE + phase * 100_000L, PeersScenario.MIN_GAP_MS, PeersScenario.MAX_GAP_MS);
                read = idle.received();
            }
            LatencyRecorder one = new LatencyRecorder();
            for (long v : s.samples()) {
                one.recordNanos(v);
                wakes.get(n).recordNanos(v);
            }
            double rate = enqueueRate(ctx, run + "e", prof, n - 1);
            rates.get(n).add(rate);
            ctx.progress().line("listeners: %d listening: wake p50 %s ms p99 %s ms %s (idle listeners read %d "
                    + "notifications), enqueue %s items/s", n, Num.text(one.summary().p50Ms()),
                    Num.text(one.summary().p99Ms()), s.wakeSources(), read, Num.text(rate));
        }
        ModeResult one = new ModeResult(Mode.SHORT);
        ModeResult many = new ModeResult(Mode.LONG);
        int first = COUNTS.get(0);
        int last = COUNTS.get(COUNTS.size() - 1);
        for (int n : COUNTS) {
            ModeResult r = n == first ? one : many;
            String key = n == first || n == last ? "" : "n" + n + ".";
            r.latency(key + "wake", wakes.get(n));
            r.metric(key + "enqueuesPerSecond", Num.median(rates.get(n).stream().mapToDouble(d -> d).toArray()),
                    "items/s", CLIENTS + " clients enqueuing, " + n + " listening (median of " + rates.get(n).size()
                            + ")");
        }
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("listening", COUNTS);
        settings.put("order", order);
        settings.put("wakeJobs", jobs);
        settings.put("clients", CLIENTS);
        return new ScenarioResult(name(), title(), description(jobs), settings, one, many, List.of(
                "Here the short column is one listening process (the hub's provider alone) and the long column "
                        + last + " of them, so long ÷ short is what " + last + " listening processes cost; the counts "
                        + "between are in the long column with their count as a prefix (n16.)."),
                (System.nanoTime() - start) / 1e9);
    }

    /** The channel a provider of {@code schema} listens on. */
    private static String hubChannel(String schema) {
        return ChannelListener.channelName("pgdurable_", schema);
    }

    private static double enqueueRate(BenchContext ctx, String run, Profile prof, int idleCount) throws Exception {
        String schema = ctx.schema(run, Mode.LONG);
        try (IdleListeners idle = IdleListeners.open(ctx.url(), hubChannel(schema), idleCount);
             Hub hub = ctx.hub(run, Mode.LONG, CLIENTS + 2)) {
            AtomicLong seq = new AtomicLong();
            AtomicLong done = new AtomicLong();
            Workers clients = new Workers();
            try {
                clients.start("listeners-client", CLIENTS, i -> () -> {
                    hub.provider().enqueueForWorker(new WorkItem.ActivityExecute("listeners", 1,
                            seq.incrementAndGet(), "L", "{}"));
                    done.incrementAndGet();
                });
                Window w = Window.measure(ctx, clients, done, prof.throughputWarmup(), prof.notifyPhase(),
                        "listeners enqueue", "enqueues");
                clients.stop();
                return w.perSecond();
            } finally {
                clients.stop();
                clients.join();
            }
        }
    }

    /**
     * Listening sessions standing in for other processes' listeners: every other one on {@code channel}, as another
     * long-polling process of the hub would listen (with its listener lock, so the hub's providers announce to it),
     * the rest on channels of their own. Each is a {@link ChannelListener}: a connection of its own that reads what
     * it is sent as it arrives.
     */
    static final class IdleListeners implements AutoCloseable {
        private static final Duration CONNECT = Duration.ofSeconds(60);
        private final List<ChannelListener> listeners;
        private final AtomicLong received;

        private IdleListeners(List<ChannelListener> listeners, AtomicLong received) {
            this.listeners = listeners;
            this.received = received;
        }

        static IdleListeners open(String url, String channel, int count) throws SQLException {
            AtomicLong received = new AtomicLong();
            java.util.concurrent.CountDownLatch connected = new java.util.concurrent.CountDownLatch(count);
            List<ChannelListener> all = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                AtomicBoolean first = new AtomicBoolean(true);
                all.add(ChannelListener.start(url, i % 2 == 0 ? channel : channel + "_other" + i,
                        Duration.ofSeconds(30), payload -> received.incrementAndGet(), () -> {
                            if (first.getAndSet(false)) {
                                connected.countDown();
                            }
                        }));
            }
            IdleListeners idle = new IdleListeners(all, received);
            try {
                if (!connected.await(CONNECT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    throw new SQLException(connected.getCount() + " of " + count + " idle listeners did not "
                            + "LISTEN within " + CONNECT.toSeconds() + " s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                idle.close();
                throw new SQLException("interrupted while the idle listeners connected", e);
            } catch (SQLException e) {
                idle.close();
                throw e;
            }
            return idle;
        }

        long received() {
            return received.get();
        }

        @Override
        public void close() {
            listeners.forEach(ChannelListener::close);
        }
    }
}
