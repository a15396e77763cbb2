package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.spi.OrchestrationProvider;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Wake latency for writers that are not a pgdurable provider: an application's trigger, a service in another
 * language, an operator's psql session. One dispatcher per queue waits; a plain JDBC connection in autocommit
 * writes through the schema's SQL API (docs/sql-api.md) one item at a time, and the gap from its statement's return
 * (the commit) to the fetch's return is the sample. With long polling the schema's notify triggers wake the fetch
 * from inside the writer's transaction; a third series disables them by hand, which is how a plain-SQL write is found
 * without them: by the one-second fallback probe.
 */
final class SqlWakeScenario extends PairedScenario {
    private static final Duration LOCK = Duration.ofMinutes(10);
    private static final String NAME = "SqlWake";

    @Override
    public String name() {
        return "sql-wake";
    }

    @Override
    public String title() {
        return "Wake latency of plain-SQL writers: commit to fetch return";
    }

    @Override
    String description() {
        return "One dispatcher per queue waits; a plain JDBC connection (autocommit, not a provider) writes one item "
                + "at a time through the SQL API, 10-30 ms apart (random): enqueue_activity (series worker) and "
                + "start_orchestration of a new instance (series orchestrator), in turn. Latency = the dispatcher's "
                + "clock when fetch returns the item minus the writer's clock when its statement returned (after the "
                + "commit). Long polling: the notify triggers wake the fetch from the writer's transaction; series "
                + "workerTriggersDisabled repeats the worker writes with the triggers disabled by hand (fewer "
                + "samples), which is how plain-SQL writes are found without them: by the fallback probe.";
    }

    private static int probeSamples(Profile p) {
        return Math.max(5, p.wakeSamples() / 10);
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samplesPerQueue", p.wakeSamples());
        m.put("samplesTriggersDisabled", probeSamples(p));
        m.put("gapMillis", List.of(10, 30));
        return m;
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        int samples = ctx.profile().wakeSamples();
        LatencyRecorder worker = new LatencyRecorder();
        LatencyRecorder orchestrator = new LatencyRecorder();
        LatencyRecorder withoutTriggers = new LatencyRecorder();
        BlockingQueue<Long> workerSeen = new ArrayBlockingQueue<>(4);
        BlockingQueue<Long> orchSeen = new ArrayBlockingQueue<>(4);
        AtomicLong negative = new AtomicLong();
        Workers dispatchers = new Workers();
        Map<String, Long> signals0;
        Map<String, Long> signals;
        String prefix = "sqlwake-" + mode.key() + "-";
        try (Hub hub = ctx.hub(name(), mode, 4);
             Connection writer = DriverManager.getConnection(ctx.url());
             Workers.Stopping stopFirst = dispatchers.stopFirst()) {
            String s = Identifiers.quote(hub.schema());
            OrchestrationProvider p = hub.provider();
            WakeScenario.startDispatchers(dispatchers, "sqlwake", mode, p, LOCK, NAME, workerSeen, orchSeen);
            hub.awaitParked(2, 10_000);
            signals0 = hub.signals().snapshot();
            try (PreparedStatement activity = writer.prepareStatement(
                         "SELECT " + s + ".enqueue_activity(?, 1, ?, '" + NAME + "', '{}')");
                 PreparedStatement start = writer.prepareStatement(
                         "SELECT " + s + ".start_orchestration(?, '" + NAME + "', '{}', '1.0.0')");
                 PreparedStatement triggers = writer.prepareStatement(
                         "SELECT " + s + ".set_notify_triggers(?)")) {
                int total = 2 * samples + (mode == Mode.LONG ? probeSamples(ctx.profile()) : 0);
                for (int i = 0; i < total; i++) {
                    boolean disabledPhase = i >= 2 * samples;
                    if (disabledPhase && i == 2 * samples) {
                        triggers.setBoolean(1, false);
                        triggers.execute();
                    }
                    Pause.sleepRandom(10, 30);
                    dispatchers.check();
                    boolean toWorker = disabledPhase || i % 2 == 0;
                    long sent;
                    if (toWorker) {
                        activity.setString(1, prefix + "w");
                        activity.setLong(2, i + 1L);
                        activity.execute();
                    } else {
                        start.setString(1, prefix + i);
                        start.execute();
                    }
                    sent = System.nanoTime();
                    Long seen = (toWorker ? workerSeen : orchSeen).poll(40, TimeUnit.SECONDS);
                    if (seen == null) {
                        throw new IllegalStateException("sql-wake: item " + i + " was not fetched within 40 s");
                    }
                    long latency = seen - sent;
                    if (latency < 0) {
                        negative.incrementAndGet();
                    }
                    (disabledPhase ? withoutTriggers : toWorker ? worker : orchestrator).recordNanos(latency);
                    if ((i + 1) % 200 == 0) {
                        ctx.progress().line("sql-wake: %s, %d/%d samples", mode.key(), i + 1, total);
                    }
                }
                if (mode == Mode.LONG) {
                    triggers.setBoolean(1, true);
                    triggers.execute();
                }
            }
            signals = CountingSignals.delta(signals0, hub.signals().snapshot());
            dispatchers.stop();
        } finally {
            dispatchers.stop();
            dispatchers.join();
        }
        ModeResult r = new ModeResult(mode)
                .latency("worker", worker)
                .latency("orchestrator", orchestrator)
                .detail("negativeSamples", negative.get());
        if (mode == Mode.LONG) {
            r.latency("workerTriggersDisabled", withoutTriggers);
            r.detail("longPollSignals", signals);
        }
        return r;
    }
}
