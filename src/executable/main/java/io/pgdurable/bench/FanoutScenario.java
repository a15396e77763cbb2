package io.pgdurable.bench;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An orchestration that fans out {@value #FANOUT} activities and joins them, driven through the provider exactly
 * as a runtime would: orchestrator dispatchers fetch turns and ack them with the history delta and new messages;
 * workers lease activities, run them (sleep) and ack with the completion. A starter keeps a fixed number of
 * orchestrations in flight. Orchestrations/s = completions in the window / window; latency = start enqueue to the ack
 * of the completing turn.
 */
final class FanoutScenario extends PairedScenario {
    static final int FANOUT = 5;
    private static final Duration LOCK = Duration.ofSeconds(30);
    private static final String NAME = "FanOut";

    /**
     * One configuration: activity duration, dispatchers per queue, orchestrations kept in flight, and whether a worker
     * acks with {@code ackWorkItemAndFetchNext} (the worker loop the README shows) or with {@code ackWorkItem} and a
     * separate fetch.
     */
    record Config(String key, int activityMillis, int orchestrators, int workers, int inFlight,
                  boolean ackAndFetch) {}

    static final List<Config> CONFIGS = List.of(new Config("10ms", 10, 2, 2, 8, true),
            new Config("10ms-ack-then-fetch", 10, 2, 2, 8, false), new Config("0ms", 0, 8, 8, 32, true));

    @Override
    public String name() {
        return "fanout";
    }

    @Override
    public String title() {
        return "Fan-out/fan-in orchestrations (" + FANOUT + " activities)";
    }

    @Override
    String description() {
        return "Each orchestration's first turn records OrchestrationStarted and " + FANOUT + " ActivityScheduled "
                + "events and enqueues " + FANOUT + " ActivityExecute items; workers fetch an activity, sleep the "
                + "activity time and ack with ActivityCompleted, in one call with the claim of their next activity "
                + "(ackWorkItemAndFetchNext; they park on a fetch only when it found none), except in the "
                + "ack-then-fetch configuration, whose workers ack and fetch in two calls; every later turn appends "
                + "the completions, and the turn that holds all " + FANOUT + " appends OrchestrationCompleted with "
                + "status Completed. A starter keeps a fixed number of orchestrations in flight. Latency = "
                + "StartOrchestration enqueue to the ack of the completing turn.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        List<Map<String, Object>> configs = new ArrayList<>();
        for (Config c : CONFIGS) {
            Map<String, Object> cm = new LinkedHashMap<>();
            cm.put("key", c.key());
            cm.put("activityMillis", c.activityMillis());
            cm.put("orchestratorDispatchers", c.orchestrators());
            cm.put("workerDispatchers", c.workers());
            cm.put("inFlight", c.inFlight());
            cm.put("ackWorkItemAndFetchNext", c.ackAndFetch());
            configs.add(cm);
        }
        m.put("configurations", configs);
        m.put("warmupSeconds", p.fanoutWarmup().toMillis() / 1000.0);
        m.put("windowSeconds", p.fanoutWindow().toMillis() / 1000.0);
        m.put("rounds", p.pairedRounds());
        return m;
    }

    @Override
    int rounds(Profile profile) {
        return profile.pairedRounds();
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        ModeResult r = new ModeResult(mode);
        for (Config c : CONFIGS) {
            run(mode, ctx, c, r);
        }
        return r;
    }

    private void run(Mode mode, BenchContext ctx, Config c, ModeResult r) throws Exception {
        Profile prof = ctx.profile();
        LatencyRecorder latency = new LatencyRecorder();
        Map<String, Long> startedAt = new ConcurrentHashMap<>();
        AtomicLong completed = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        Semaphore inFlight = new Semaphore(c.inFlight());
        Workers threads = new Workers();
        String prefix = "fo-" + mode.key() + "-" + c.key() + "-";
        try (Hub hub = ctx.hub(name() + "_" + c.key() + roundSuffix(), mode, c.orchestrators() + c.workers() + 3);
             Workers.Stopping stopFirst = threads.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            Map<String, Long> signals0 = hub.signals().snapshot();
            threads.start("fo-orch", c.orchestrators(), i -> () -> {
                Optional<FetchedOrchestration> f = mode.pollOrchestration(p, LOCK);
                if (f.isPresent() && turn(p, f.get())) {
                    Long t0 = startedAt.remove(f.get().item().instance());
                    if (t0 != null) {
                        latency.recordNanos(System.nanoTime() - t0);
                    }
                    completed.incrementAndGet();
                    inFlight.release();
                }
            });
            threads.start("fo-work", c.workers(), i -> {
                List<FetchedWorkItem> next = new ArrayList<>(1);
                return () -> {
                    Optional<FetchedWorkItem> f = next.isEmpty()
                            ? mode.pollWork(p, LOCK) : Optional.of(next.remove(0));
                    if (f.isEmpty()) {
                        return;
                    }
                    WorkItem.ActivityExecute a = (WorkItem.ActivityExecute) f.get().item();
                    if (c.activityMillis() > 0) {
                        Pause.sleep(c.activityMillis());
                    }
                    WorkItem done = new WorkItem.ActivityCompleted(a.instance(), a.executionId(), a.id(), "\"ok\"");
                    if (c.ackAndFetch()) {
                        p.ackWorkItemAndFetchNext(f.get().lockToken(), done, LOCK, null, TagFilter.defaultOnly())
                                .ifPresent(next::add);
                    } else {
                        p.ackWorkItem(f.get().lockToken(), done);
                    }
                };
            });
            threads.start("fo-start", 1, i -> () -> {
                if (!inFlight.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    return;
                }
                String instance = prefix + seq.incrementAndGet();
                startedAt.put(instance, System.nanoTime());
                p.enqueueForOrchestrator(new WorkItem.StartOrchestration(instance, NAME, "{}", "1.0.0"), null);
            });
            Window w = Window.measure(ctx, threads, completed, prof.fanoutWarmup(), prof.fanoutWindow(),
                    "fanout " + c.key() + " " + mode.key(), "orchestrations");
            threads.stop();
            if (mode == Mode.LONG) {
                r.detail(c.key() + ".longPollSignals", CountingSignals.delta(signals0, hub.signals().snapshot()));
            }
            r.metric(c.key() + ".orchestrationsPerSecond", w.perSecond(), "orchestrations/s",
                    c.activityMillis() + " ms activities, " + c.orchestrators() + " + " + c.workers()
                            + " dispatchers" + (c.ackAndFetch() ? "" : ", ack then fetch in two calls"));
            w.perUnit(r, ctx, c.key() + ".", "orchestration");
            r.latency(c.key() + ".latency", latency);
            r.detail(c.key() + ".topStatements", w.top());
            r.detail(c.key() + ".waitEvents", w.waits());
        } finally {
            threads.stop();
            threads.join();
        }
    }

    /** Runs one orchestration turn as a runtime would; true when it completed the orchestration. */
    private static boolean turn(OrchestrationProvider p, FetchedOrchestration fetched) {
        OrchestrationItem item = fetched.item();
        List<Event> history = item.history();
        long next = history.isEmpty() ? 1 : history.get(history.size() - 1).eventId() + 1;
        int completions = 0;
        for (Event e : history) {
            if ("ActivityCompleted".equals(e.type())) {
                completions++;
            }
        }
        List<Event> delta = new ArrayList<>();
        List<WorkItem> work = new ArrayList<>();
        ExecutionMetadata metadata = ExecutionMetadata.empty();
        boolean done = false;
        for (WorkItem m : item.messages()) {
            if (m instanceof WorkItem.StartOrchestration s && history.isEmpty() && delta.isEmpty()) {
                delta.add(Events.orchestrationStarted(next++, NAME, "1.0.0", s.input()));
                for (int a = 0; a < FANOUT; a++) {
                    long id = next++;
                    delta.add(Events.activityScheduled(id, "Work", "{\"n\":" + a + "}"));
                    work.add(new WorkItem.ActivityExecute(item.instance(), item.executionId(), id, "Work",
                            "{\"n\":" + a + "}"));
                }
                metadata = ExecutionMetadata.of(NAME, "1.0.0");
            } else if (m instanceof WorkItem.ActivityCompleted ac) {
                delta.add(Events.activityCompleted(next++, ac.id(), ac.result()));
                completions++;
            }
        }
        if (completions == FANOUT) {
            delta.add(Events.orchestrationCompleted(next, "\"done\""));
            metadata = metadata.withStatus(ExecutionMetadata.COMPLETED, "\"done\"");
            done = true;
        }
        p.ackOrchestrationItem(fetched.lockToken(), item.executionId(), delta, work, List.of(), metadata, List.of());
        return done;
    }
}
