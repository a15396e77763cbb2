package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Drain throughput: a worker queue pre-filled with {@code drainItems} items is emptied by {@value #CONSUMERS}
 * consumers, and the clock runs from their start to the last ack; an untimed warm-up drain on the same provider (or
 * raw connections) comes first. Every way of consuming is timed in the same mode and round, beside a raw-SQL floor on
 * the same database (one table, claim and delete in one statement), so the ratios compare like with like on a noisy
 * machine. Each arm runs {@code drainRounds} times, interleaved; figures are medians. Every drained item is checked to
 * be acked exactly once and the queue to be empty afterwards.
 *
 * <p>Each drain has a provider of its own; once the last ack is counted it is closed, which returns the fetches of
 * consumers parked on the empty queue.
 */
final class DrainScenario extends PairedScenario {
    static final int CONSUMERS = 4;
    static final int BATCH = 100;
    private static final Duration LOCK = Duration.ofSeconds(60);
    private static final String PAYLOAD_INPUT = "{}";
    /** Activity ids of a round's warm-up items start here above the round's own ids (never reached by them). */
    private static final long WARM_UP_ID_OFFSET = 5_000_000L;

    /** The ways of consuming, in run order within a round. */
    enum Arm {
        RAW_SINGLE("rawSingle", "raw SQL floor, one row per statement: DELETE … WHERE id = (SELECT … FOR UPDATE SKIP "
                + "LOCKED LIMIT 1) RETURNING payload"),
        SINGLE("single", "fetchWorkItem + ackWorkItem, one item per call"),
        ACK_NEXT("ackNext", "ackWorkItemAndFetchNext: the ack and the next claim in one call"),
        RAW_BATCHED("rawBatched", "raw SQL floor, 100 rows per statement: DELETE … WHERE id IN (SELECT … FOR UPDATE "
                + "SKIP LOCKED LIMIT 100) RETURNING payload"),
        BATCHED("batched", "fetchWorkItems (100) + ackWorkItems (the whole batch in one call)"),
        GROUPED("batchedGroupedAcks", "fetchWorkItems (100) + ackWorkItem per item on a thread of its own, grouped by "
                + "ackBatchSize 100");

        final String key;
        final String description;

        Arm(String key, String description) {
            this.key = key;
            this.description = description;
        }

        boolean raw() {
            return this == RAW_SINGLE || this == RAW_BATCHED;
        }
    }

    @Override
    public String name() {
        return "drain";
    }

    @Override
    public String title() {
        return "Drain throughput against a raw-SQL floor";
    }

    @Override
    String description() {
        StringBuilder sb = new StringBuilder("A pre-filled worker queue is drained by " + CONSUMERS + " consumers; "
                + "jobs/s = items ÷ (first consumer start → last ack). Arms, each on its own schema, interleaved "
                + "round by round, medians of the rounds. Before each timed drain the same consumers (or the raw "
                + "floor's connections) drain an untimed warm-up fill of a tenth as many items with the same calls, "
                + "so the clock counts draining, not opening connections and compiling functions:");
        for (Arm a : Arm.values()) {
            sb.append(" **").append(a.key).append("**: ").append(a.description).append(';');
        }
        sb.setLength(sb.length() - 1);
        return sb.append(". Ratios are against the raw floor of the same shape (single or 100 per statement) "
                + "measured in the same mode and rounds. Client CPU = this JVM's process CPU time per job (the "
                + "consumers, the provider and the JVM together); server ms per job needs pg_stat_statements. Every "
                + "item is verified acked exactly once and the queue empty after each drain.").toString();
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("items", p.drainItems());
        m.put("consumers", CONSUMERS);
        m.put("batch", BATCH);
        m.put("rounds", p.drainRounds());
        m.put("warmUpItems", warmUpItems(p.drainItems()));
        m.put("lockTimeoutSeconds", LOCK.toSeconds());
        return m;
    }

    /**
     * One timed drain: its seconds, the server's statements and execution time, this JVM's CPU time, the server's
     * CPU time (every process of the cluster; NaN where it cannot be read) and the WAL written.
     */
    record Run(double seconds, long statements, double serverMs, double cpuMs, double serverCpuMs, double walBytes) {
        static Run between(double seconds, Server before, Server after) {
            UnitCosts.Spent spent = UnitCosts.between(before.costs, after.costs);
            return new Run(seconds, after.statements - before.statements, after.execMs - before.execMs,
                    spent.clientCpuMillis(), spent.serverCpuMillis(), spent.walBytes());
        }
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        Profile p = ctx.profile();
        int items = p.drainItems();
        Map<Arm, List<Run>> runs = new LinkedHashMap<>();
        for (Arm a : Arm.values()) {
            runs.put(a, new ArrayList<>());
        }
        String raw = ctx.schema(name() + "_raw", mode);
        createRawTable(ctx, raw);
        for (int round = 1; round <= p.drainRounds(); round++) {
            for (Arm a : Arm.values()) {
                Run run = a.raw() ? rawDrain(ctx, raw, a, items) : drain(ctx, name(), mode, a, items, round);
                runs.get(a).add(run);
                ctx.progress().line("drain %s round %d: %s %s jobs/s", mode.key(), round, a.key,
                        Num.text(items / run.seconds));
            }
        }
        ModeResult r = new ModeResult(mode);
        Map<Arm, Double> rate = new LinkedHashMap<>();
        for (Arm a : Arm.values()) {
            List<Run> rs = runs.get(a);
            double[] perSecond = rs.stream().mapToDouble(x -> items / x.seconds).sorted().toArray();
            double median = Num.median(perSecond);
            rate.put(a, median);
            r.metric(a.key + ".jobsPerSecond", median, "jobs/s", a.description + " (median of " + rs.size() + ")");
            r.metric(a.key + ".statementsPerJob", Num.median(rs.stream().mapToDouble(x -> (double) x.statements / items)
                    .toArray()), ctx.counter().source().unit() + "/job", "server "
                    + ctx.counter().source().unit() + " per job (" + ctx.counter().source().view() + ")");
            double serverMs = Num.median(rs.stream().mapToDouble(x -> x.serverMs / items).toArray());
            if (!Double.isNaN(serverMs)) {
                r.metric(a.key + ".serverMsPerJob", serverMs, "ms/job", "server execution time per job "
                        + "(pg_stat_statements total_exec_time)");
            }
            r.metric(a.key + ".clientCpuMsPerJob", Num.median(rs.stream().mapToDouble(x -> x.cpuMs / items).toArray()),
                    "ms/job", "client (this JVM) CPU time per job");
            r.metric(a.key + ".serverCpuMsPerJob", Num.median(rs.stream().mapToDouble(x -> x.serverCpuMs / items)
                    .toArray()), "ms/job", "server CPU time per job (every process of the cluster)");
            r.metric(a.key + ".walBytesPerJob", Num.median(rs.stream().mapToDouble(x -> x.walBytes / items)
                    .toArray()), "bytes/job", "WAL bytes per job");
            r.detail(a.key + ".rounds", Arrays.stream(perSecond).mapToObj(Num::round).toList());
        }
        r.metric("single.ratioToFloor", rate.get(Arm.SINGLE) / rate.get(Arm.RAW_SINGLE), "× floor",
                "single-item drain ÷ single-row raw floor");
        r.metric("ackNext.ratioToFloor", rate.get(Arm.ACK_NEXT) / rate.get(Arm.RAW_SINGLE), "× floor",
                "ack-and-fetch-next drain ÷ single-row raw floor");
        r.metric("batched.ratioToFloor", rate.get(Arm.BATCHED) / rate.get(Arm.RAW_BATCHED), "× floor",
                "batched drain ÷ 100-row raw floor");
        r.metric("batchedGroupedAcks.ratioToFloor", rate.get(Arm.GROUPED) / rate.get(Arm.RAW_BATCHED), "× floor",
                "batched drain with grouped single acks ÷ 100-row raw floor");
        return r;
    }

    // ------------------------------------------------------------------ the provider arms

    /**
     * One drain on a provider opened for it, on the schema of {@code scenario} and the arm (the peers scenario runs
     * its pgdurable arms with this too): closing the provider at the end returns the parked fetches of the
     * consumers that found the queue empty. Before the clock starts, the same consumers drain a warm-up fill
     * ({@link #warmUpItems}) with the arm's own calls, without parking.
     */
    static Run drain(BenchContext ctx, String scenario, Mode mode, Arm arm, int items, int round) throws Exception {
        long base = (long) round * 10_000_000L;
        Counted counted = Counted.of(base, items);
        Counted warmed = Counted.of(base + WARM_UP_ID_OFFSET, warmUpItems(items));
        Consumer body = consumer(arm, mode);
        Consumer warmBody = consumer(arm, Mode.SHORT);
        ExecutorService consumers = Executors.newFixedThreadPool(CONSUMERS, r -> {
            Thread t = new Thread(r, "bench-drain-" + arm.key);
            t.setDaemon(true);
            return t;
        });
        String schema;
        Run run;
        List<Future<?>> running;
        try (Hub hub = ctx.hub(scenario + "_" + arm.key, mode, CONSUMERS + 4,
                arm == Arm.GROUPED ? b -> b.ackBatchSize(BATCH) : b -> b)) {
            schema = hub.schema();
            OrchestrationProvider p = hub.provider();
            fill(p, warmed.base(), warmed.items());
            for (Future<?> f : start(consumers, warmBody, p, warmed)) {
                f.get(10, TimeUnit.MINUTES); // short polling: each consumer returns once the warm-up is acked
            }
            countedOnce(warmed, arm, "warm-up");
            fill(p, base, items);
            Server before = Server.read(ctx);
            long t0 = System.nanoTime();
            running = start(consumers, body, p, counted);
            while (!counted.allAcked().await(250, TimeUnit.MILLISECONDS)) {
                for (Future<?> f : running) {
                    if (f.isDone()) {
                        f.get(); // a consumer that failed ends the drain with its error
                        throw new IllegalStateException("a drain consumer stopped before the queue was drained");
                    }
                }
            }
            Server after = Server.read(ctx);
            run = Run.between((counted.lastAckNanos().get() - t0) / 1e9, before, after);
        } finally {
            consumers.shutdown();
            body.close();
            warmBody.close();
        }
        for (Future<?> f : running) {
            f.get(60, TimeUnit.SECONDS);
        }
        countedOnce(counted, arm, "drain");
        verifyEmpty(ctx, schema, arm);
        return run;
    }

    /**
     * Items of the untimed warm-up before each drain, provider and raw floor alike: enough batches for every consumer
     * to run its calls on a connection of its own. Without it each drain also timed what only a new provider pays —
     * the pool growing to {@value #CONSUMERS} connections and each new server session compiling the stored functions
     * on its first call (about 25 ms per session here, against well under a second for a batched drain).
     */
    static int warmUpItems(int items) {
        return Math.max(CONSUMERS * BATCH, items / 10);
    }

    private static Consumer consumer(Arm arm, Mode mode) {
        return switch (arm) {
            case SINGLE -> new SingleConsumer(mode, false);
            case ACK_NEXT -> new SingleConsumer(mode, true);
            case BATCHED -> new BatchConsumer(mode, null);
            case GROUPED -> new BatchConsumer(mode, BatchedThroughput.ackThreads(BATCH, "bench-drain-ack"));
            default -> throw new IllegalArgumentException(arm.name());
        };
    }

    private static List<Future<?>> start(ExecutorService consumers, Consumer body, OrchestrationProvider p,
                                         Counted counted) {
        List<Future<?>> running = new ArrayList<>();
        for (int i = 0; i < CONSUMERS; i++) {
            running.add(consumers.submit(() -> {
                try {
                    body.consume(p, counted);
                } catch (Exception e) {
                    if (!counted.done()) {
                        throw e; // after the drain, closing the provider cuts parked fetches short
                    }
                }
                return null;
            }));
        }
        return running;
    }

    private static void fill(OrchestrationProvider p, long base, int items) {
        List<WorkItem> chunk = new ArrayList<>(1000);
        for (int i = 0; i < items; i++) {
            chunk.add(new WorkItem.ActivityExecute("drain", 1, base + i, "Drain", PAYLOAD_INPUT));
            if (chunk.size() == 1000 || i == items - 1) {
                p.enqueueAllForWorker(chunk);
                chunk.clear();
            }
        }
    }

    private static void countedOnce(Counted counted, Arm arm, String what) {
        exactlyOnce(counted.seen(), what + " " + arm.key, "acked");
    }

    /** Fails unless every slot of {@code seen} was counted exactly once ({@code done}: what counting it means). */
    private static void exactlyOnce(AtomicIntegerArray seen, String what, String done) {
        int missing = 0;
        int twice = 0;
        for (int i = 0; i < seen.length(); i++) {
            int n = seen.get(i);
            if (n == 0) {
                missing++;
            } else if (n > 1) {
                twice++;
            }
        }
        if (missing > 0 || twice > 0) {
            throw new AssertionError(what + ": not exactly once: " + missing + " item(s) never " + done + ", "
                    + twice + " " + done + " more than once");
        }
    }

    private static void verifyEmpty(BenchContext ctx, String schema, Arm arm) throws SQLException {
        long left = workerQueueRows(ctx.url(), schema);
        if (left > 0) {
            throw new AssertionError("drain " + arm.key + ": " + left + " row(s) left in the queue after the drain");
        }
    }

    /** Rows in {@code schema}'s worker queue, leased or not: what a drain or a wake series left behind. */
    static long workerQueueRows(String url, String schema) throws SQLException {
        try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM " + Identifiers.quote(schema) + ".worker_queue")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Shared bookkeeping of one drain: which items were acked how often, and when the last one was. */
    private record Counted(long base, int items, AtomicIntegerArray seen, AtomicLong acked, CountDownLatch allAcked,
                           AtomicLong lastAckNanos) {
        static Counted of(long base, int items) {
            return new Counted(base, items, new AtomicIntegerArray(items), new AtomicLong(), new CountDownLatch(1),
                    new AtomicLong());
        }

        /** Counts an item whose ack returned. */
        void acked(WorkItem item) {
            long id = ((WorkItem.ActivityExecute) item).id();
            int index = (int) (id - base);
            if (index < 0 || index >= items) {
                throw new AssertionError("drain: fetched an item of another round: " + id);
            }
            seen.incrementAndGet(index);
            if (acked.incrementAndGet() == items) {
                lastAckNanos.set(System.nanoTime());
                allAcked.countDown();
            }
        }

        boolean done() {
            return allAcked.getCount() == 0;
        }
    }

    private interface Consumer extends AutoCloseable {
        void consume(OrchestrationProvider p, Counted counted) throws Exception;

        @Override
        default void close() {}
    }

    /** One item per call; with {@code ackNext} each ack also claims the next item. */
    private record SingleConsumer(Mode mode, boolean ackNext) implements Consumer {
        @Override
        public void consume(OrchestrationProvider p, Counted counted) {
            FetchedWorkItem f = null;
            while (!counted.done()) {
                if (f == null) {
                    Optional<FetchedWorkItem> got = mode.pollWork(p, LOCK);
                    if (got.isEmpty()) {
                        continue;
                    }
                    f = got.get();
                }
                if (ackNext) {
                    Optional<FetchedWorkItem> next = p.ackWorkItemAndFetchNext(f.lockToken(), null, LOCK, null,
                            TagFilter.defaultOnly());
                    counted.acked(f.item());
                    f = next.orElse(null);
                } else {
                    p.ackWorkItem(f.lockToken(), null);
                    counted.acked(f.item());
                    f = null;
                }
            }
        }
    }

    /** Batches of {@value #BATCH}: acked in one call, or (with {@code ackers}) one thread per ack, grouped. */
    private record BatchConsumer(Mode mode, ExecutorService ackers) implements Consumer {
        @Override
        public void consume(OrchestrationProvider p, Counted counted) throws Exception {
            WorkBatch batch = mode == Mode.LONG ? new WorkBatch(BATCH, 1, Mode.LONG_POLL_TIMEOUT)
                    : WorkBatch.upTo(BATCH);
            while (!counted.done()) {
                List<FetchedWorkItem> got = p.fetchWorkItems(LOCK, batch, null, TagFilter.defaultOnly());
                if (got.isEmpty()) {
                    if (mode == Mode.SHORT) {
                        Pause.sleep(Mode.SHORT_POLL_INTERVAL.toMillis());
                    }
                    continue;
                }
                ack(p, got);
                for (FetchedWorkItem f : got) {
                    counted.acked(f.item());
                }
            }
        }

        private void ack(OrchestrationProvider p, List<FetchedWorkItem> got) throws Exception {
            if (ackers == null) {
                List<WorkAck> acks = new ArrayList<>(got.size());
                for (FetchedWorkItem f : got) {
                    acks.add(new WorkAck(f.lockToken(), null));
                }
                for (AckResult a : p.ackWorkItems(acks)) {
                    if (!a.isAcked()) {
                        throw a.error();
                    }
                }
                return;
            }
            BatchedThroughput.ackEachOnItsOwnThread(p, ackers, got);
        }

        @Override
        public void close() {
            if (ackers != null) {
                ackers.shutdownNow();
            }
        }
    }

    // ------------------------------------------------------------------ the raw floor

    private static void createRawTable(BenchContext ctx, String schema) throws SQLException {
        try (Connection c = DriverManager.getConnection(ctx.url()); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA IF NOT EXISTS " + Identifiers.quote(schema));
            st.execute("CREATE TABLE IF NOT EXISTS " + Identifiers.quote(schema) + ".q (id bigint PRIMARY KEY, "
                    + "payload text NOT NULL)");
        }
    }

    /** The raw floor's drain, after a warm-up drain on the same connections (as the provider arms have). */
    private Run rawDrain(BenchContext ctx, String schema, Arm arm, int items) throws Exception {
        String q = Identifiers.quote(schema) + ".q";
        int per = arm == Arm.RAW_SINGLE ? 1 : BATCH;
        String claim = per == 1
                ? "DELETE FROM " + q + " WHERE id = (SELECT id FROM " + q + " ORDER BY id FOR UPDATE SKIP LOCKED "
                        + "LIMIT 1) RETURNING id, payload"
                : "DELETE FROM " + q + " WHERE id IN (SELECT id FROM " + q + " ORDER BY id FOR UPDATE SKIP LOCKED "
                        + "LIMIT " + per + ") RETURNING id, payload";
        List<Connection> connections = new ArrayList<>();
        ExecutorService clients = Executors.newFixedThreadPool(CONSUMERS);
        try {
            for (int i = 0; i < CONSUMERS; i++) {
                connections.add(DriverManager.getConnection(ctx.url()));
            }
            int warm = warmUpItems(items);
            // Warm-up rows sort before the drain's, as the provider's do (identity order).
            rawFill(ctx, q, 1, warm);
            rawPass(clients, connections, claim, 1, warm);
            rawFill(ctx, q, warm + 1, items);
            Server before = Server.read(ctx);
            long t0 = System.nanoTime();
            long end = Math.max(t0, rawPass(clients, connections, claim, warm + 1, items));
            Server after = Server.read(ctx);
            return Run.between((end - t0) / 1e9, before, after);
        } finally {
            clients.shutdownNow();
            for (Connection c : connections) {
                c.close();
            }
        }
    }

    private static void rawFill(BenchContext ctx, String q, long firstId, int count) throws SQLException {
        String payload = new WorkItem.ActivityExecute("drain", 1, 0, "Drain", PAYLOAD_INPUT).toJson();
        try (Connection c = DriverManager.getConnection(ctx.url());
             PreparedStatement ins = c.prepareStatement("INSERT INTO " + q + " (id, payload) SELECT g, ? FROM "
                     + "generate_series(?::bigint, ?::bigint) g")) {
            ins.setString(1, payload);
            ins.setLong(2, firstId);
            ins.setLong(3, firstId + count - 1);
            ins.executeUpdate();
        }
    }

    /**
     * Drains rows {@code firstId …} of the raw table on the connections, one client thread each, checks every row was
     * deleted exactly once, and returns when the last claim that deleted rows returned ({@link System#nanoTime}).
     */
    private static long rawPass(ExecutorService clients, List<Connection> connections, String claim, long firstId,
                                int count) throws Exception {
        AtomicIntegerArray seen = new AtomicIntegerArray(count);
        List<Future<Long>> done = new ArrayList<>();
        for (Connection c : connections) {
            done.add(clients.submit(() -> {
                long last = 0;
                try (PreparedStatement ps = c.prepareStatement(claim)) {
                    while (true) {
                        int n = 0;
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                seen.incrementAndGet((int) (rs.getLong(1) - firstId));
                                rs.getString(2);
                                n++;
                            }
                        }
                        if (n == 0) {
                            return last;
                        }
                        last = System.nanoTime();
                    }
                }
            }));
        }
        long end = 0;
        for (Future<Long> f : done) {
            end = Math.max(end, f.get(10, TimeUnit.MINUTES));
        }
        exactlyOnce(seen, "raw drain", "deleted");
        return end;
    }

    /** The server's counters and this process's CPU time at one moment. */
    /** One end of a timed drain. */
    record Server(long statements, double execMs, UnitCosts.Reading costs) {
        static Server read(BenchContext ctx) {
            return new Server(ctx.counter().total(), ctx.counter().execMillis(), ctx.costs().read());
        }
    }
}
