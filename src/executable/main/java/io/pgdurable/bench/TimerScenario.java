package io.pgdurable.bench;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.OrchestrationProvider;
import io.pgdurable.spi.WorkItem;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Timer accuracy: delayed orchestrator items, half {@code TimerFired} with a {@code fire_at} for a running instance,
 * half a {@code StartOrchestration} enqueued with a delay. Lateness = the dispatcher's clock when its fetch returns
 * the item minus the item's visible-at time (exact: the fire time, or the enqueue's own {@code now} read through the
 * provider's clock plus the delay). A negative lateness is an early delivery.
 *
 * <p>Each sample's lateness is split where it arose: when the deadline that woke a fetch for it fired, against the
 * time it was armed for (visible-at minus the timer lead); when the claim that returned it started (its clock read),
 * against visible-at (negative: claimed ahead); and from there to the fetch's return (the round trip, and for a claim
 * made ahead the wait for visible-at). The slowest samples are listed with their parts (details "slowest").
 */
final class TimerScenario extends PairedScenario {
    private static final Duration LOCK = Duration.ofMinutes(10);
    private static final String NAME = "Timers";
    private static final int DISPATCHERS = 4;

    @Override
    public String name() {
        return "timer";
    }

    @Override
    public String title() {
        return "Timer accuracy of delayed items";
    }

    @Override
    String description() {
        return DISPATCHERS + " orchestrator dispatchers wait; the producer enqueues delayed items one by one, each "
                + "becoming visible 50 ms to the maximum delay later (random): even items are TimerFired messages "
                + "(fire_at) for running instances, odd ones StartOrchestration messages enqueued with a delay. "
                + "Lateness = fetch return minus visible-at; a delivery before visible-at counts as early.";
    }

    @Override
    Map<String, Object> settings(Profile p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samples", p.timerSamples());
        m.put("dispatchers", DISPATCHERS);
        m.put("delayMillis", List.of(50, p.timerMaxDelay().toMillis()));
        m.put("paceMillis", pace(p));
        return m;
    }

    private static long pace(Profile p) {
        return p.quick() ? 20 : 50;
    }

    @Override
    ModeResult runMode(Mode mode, BenchContext ctx) throws Exception {
        Profile prof = ctx.profile();
        int samples = prof.timerSamples();
        int timers = (samples + 1) / 2;
        String prefix = "tm-" + mode.key() + "-";
        Map<Integer, Long> visibleAt = new ConcurrentHashMap<>();
        Map<Integer, Boolean> delivered = new ConcurrentHashMap<>();
        Map<Integer, long[]> claimed = new ConcurrentHashMap<>();
        LatencyRecorder all = new LatencyRecorder();
        LatencyRecorder timerFired = new LatencyRecorder();
        LatencyRecorder delayed = new LatencyRecorder();
        AtomicLong early = new AtomicLong();
        AtomicInteger started = new AtomicInteger();
        Workers dispatchers = new Workers();
        Map<String, Long> signals = Map.of();
        LatencyRecorder deadlineFire = new LatencyRecorder();
        LatencyRecorder claimStart = new LatencyRecorder();
        LatencyRecorder claimToReturn = new LatencyRecorder();
        List<Map<String, Object>> slowest = List.of();
        try (Hub hub = ctx.hub(name(), mode, DISPATCHERS + 2);
             Workers.Stopping stopFirst = dispatchers.stopFirst()) {
            OrchestrationProvider p = hub.provider();
            dispatchers.start("timer-orch", DISPATCHERS, i -> () -> {
                Optional<FetchedOrchestration> f = mode.pollOrchestration(p, LOCK);
                if (f.isEmpty()) {
                    return;
                }
                long returnedMicros = RecordingClock.nowMicros();
                long claimStartMicros = hub.clock().readBeforeRoundTripMicros(returnedMicros);
                FetchedOrchestration turn = f.get();
                for (WorkItem m : turn.item().messages()) {
                    int sample = -1;
                    if (m instanceof WorkItem.TimerFired t) {
                        sample = (int) t.id();
                    } else if (m instanceof WorkItem.StartOrchestration s && s.instance().contains("-d-")) {
                        sample = Integer.parseInt(s.instance().substring(s.instance().lastIndexOf('-') + 1));
                    }
                    if (sample >= 0 && delivered.putIfAbsent(sample, true) == null) {
                        long lateness = returnedMicros - visibleAtOf(visibleAt, sample) * 1000L;
                        if (lateness < 0) {
                            early.incrementAndGet();
                        }
                        claimed.put(sample, new long[] {claimStartMicros, returnedMicros});
                        all.recordMicros(lateness);
                        (sample % 2 == 0 ? timerFired : delayed).recordMicros(lateness);
                    }
                }
                ack(p, turn, started);
            });
            // Setup: the running instances that receive the timers.
            for (int j = 0; j < timers; j++) {
                p.enqueueForOrchestrator(new WorkItem.StartOrchestration(prefix + "t-" + j, NAME, "{}", "1.0.0"),
                        null);
            }
            if (!Pause.until(() -> started.get() >= timers || dispatchers.failure() != null, 60_000)) {
                throw new IllegalStateException("timer: only " + started.get() + " of " + timers
                        + " instances started within 60 s");
            }
            dispatchers.check();
            hub.awaitParked(DISPATCHERS, 10_000);
            hub.clock().traceReads();
            hub.signals().traceDeadlineWakes();
            Map<String, Long> signals0 = hub.signals().snapshot();
            long maxDelay = prof.timerMaxDelay().toMillis();
            for (int i = 0; i < samples; i++) {
                long delay = 50 + ThreadLocalRandom.current().nextLong(maxDelay - 50 + 1);
                if (i % 2 == 0) {
                    long fireAt = System.currentTimeMillis() + delay;
                    visibleAt.put(i, fireAt);
                    p.enqueueForOrchestrator(new WorkItem.TimerFired(prefix + "t-" + (i / 2), 1, i, fireAt), null);
                } else {
                    hub.clock().mark();
                    p.enqueueForOrchestrator(new WorkItem.StartOrchestration(prefix + "d-" + i, NAME, "{}",
                            "1.0.0"), Duration.ofMillis(delay));
                    visibleAt.put(i, hub.clock().firstSinceMark() + delay);
                }
                Pause.sleep(pace(prof));
                dispatchers.check();
            }
            Pause.until(() -> delivered.size() >= samples || dispatchers.failure() != null, maxDelay + 10_000);
            dispatchers.check();
            signals = CountingSignals.delta(signals0, hub.signals().snapshot());
            long leadMicros = hub.provider().config().timerLead().toNanos() / 1000;
            slowest = split(visibleAt, claimed, hub.signals().deadlineWakeMicros(), leadMicros, deadlineFire,
                    claimStart, claimToReturn, Math.max(6, samples / 100));
            dispatchers.stop();
        } finally {
            dispatchers.stop();
            dispatchers.join();
        }
        return new ModeResult(mode)
                .metric("earlyDeliveries", early.get(), "items", "delivered before visible-at")
                .metric("undelivered", samples - delivered.size(), "items", "not delivered within max delay + 10 s")
                .latency("lateness", all)
                .latency("timerFired", timerFired)
                .latency("delayedEnqueue", delayed)
                .latency("deadlineFire", deadlineFire)
                .latency("claimStart", claimStart)
                .latency("claimToReturn", claimToReturn)
                .detail("signals", signals)
                .detail("slowest", slowest);
    }

    /** A deadline wake this long before a claim started may be the one that woke it; an older one is not. */
    private static final long WAKE_MATCH_MICROS = 20_000;

    /**
     * Splits every delivered sample's lateness into its parts (see the class comment) and returns the
     * {@code listed} slowest samples with them, slowest first. The deadline wake of a sample is the latest one at or
     * before its claim's start (within {@link #WAKE_MATCH_MICROS}); two samples visible within a millisecond or two
     * of each other can be matched to each other's wake, which the listing's figures show.
     */
    private static List<Map<String, Object>> split(Map<Integer, Long> visibleAt, Map<Integer, long[]> claimed,
                                                   long[] wakes, long leadMicros, LatencyRecorder deadlineFire,
                                                   LatencyRecorder claimStart, LatencyRecorder claimToReturn,
                                                   int listed) {
        record Split(int sample, long visible, long start, long returned, Long fire) {}
        SlowestSamples<Split> slowest = new SlowestSamples<>(listed);
        for (Map.Entry<Integer, long[]> e : claimed.entrySet()) {
            long visible = visibleAt.get(e.getKey()) * 1000L;
            long start = e.getValue()[0];
            long returned = e.getValue()[1];
            if (start == Long.MIN_VALUE || start > returned) {
                continue; // no clock read traced on the claiming thread: no split for this sample
            }
            claimStart.recordMicros(start - visible);
            claimToReturn.recordMicros(returned - start);
            int found = java.util.Arrays.binarySearch(wakes, start);
            int w = found >= 0 ? found : -found - 2; // the latest wake at or before the claim's start, -1 when none
            Long fire = null;
            if (w >= 0 && start - wakes[w] <= WAKE_MATCH_MICROS) {
                fire = wakes[w] - (visible - leadMicros);
                deadlineFire.recordMicros(fire);
            }
            slowest.offer(returned - visible, new Split(e.getKey(), visible, start, returned, fire));
        }
        List<Map<String, Object>> rows = new java.util.ArrayList<>();
        for (SlowestSamples.Sample<Split> kept : slowest.slowestFirst()) {
            Split s = kept.detail();
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("sample", s.sample());
            row.put("latenessMs", Num.round((s.returned() - s.visible()) / 1000.0));
            if (s.fire() != null) {
                row.put("deadlineFireMs", Num.round(s.fire() / 1000.0));
            }
            row.put("claimStartMs", Num.round((s.start() - s.visible()) / 1000.0));
            row.put("claimToReturnMs", Num.round((s.returned() - s.start()) / 1000.0));
            rows.add(row);
        }
        return rows;
    }

    /** The visible-at of a sample; it is stored right after its enqueue returns, well before it can be fetched. */
    private static long visibleAtOf(Map<Integer, Long> visibleAt, int sample) {
        Long v = visibleAt.get(sample);
        for (int i = 0; v == null && i < 1000; i++) {
            Pause.sleep(1);
            v = visibleAt.get(sample);
        }
        if (v == null) {
            throw new IllegalStateException("timer: sample " + sample + " fetched before it was recorded");
        }
        return v;
    }

    /** Acks a turn as a runtime would: starts, fired timers, and completes the delayed starts. */
    private static void ack(OrchestrationProvider p, FetchedOrchestration turn, AtomicInteger started) {
        List<Event> history = turn.item().history();
        long next = history.isEmpty() ? 1 : history.get(history.size() - 1).eventId() + 1;
        List<Event> delta = new java.util.ArrayList<>();
        ExecutionMetadata metadata = ExecutionMetadata.empty();
        boolean setupStart = false;
        for (WorkItem m : turn.item().messages()) {
            if (m instanceof WorkItem.StartOrchestration s) {
                delta.add(Events.orchestrationStarted(next++, NAME, "1.0.0", "{}"));
                metadata = ExecutionMetadata.of(NAME, "1.0.0");
                if (s.instance().contains("-d-")) {
                    delta.add(Events.orchestrationCompleted(next++, "null"));
                    metadata = metadata.withStatus(ExecutionMetadata.COMPLETED, "null");
                } else {
                    setupStart = true;
                }
            } else if (m instanceof WorkItem.TimerFired t) {
                delta.add(Events.of(next++, "TimerFired", "timer_id", t.id(), "fire_at_ms", t.fireAtMs()));
            }
        }
        p.ackOrchestrationItem(turn.lockToken(), turn.item().executionId(), delta, List.of(), List.of(), metadata,
                List.of());
        if (setupStart) {
            started.incrementAndGet();
        }
    }
}
