package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The performance targets (for the reference machine: 2 cores, local PostgreSQL 15). Each is
 * judged on the long-polling figure (or the long ÷ short ratio); a missed one is reported as missed.
 *
 * <p>"Flat as waiters grow" has no number of its own; it is judged as: going from the smallest to the largest
 * waiter count, long-polling statements/s grow per added waiter by at most the one claim each parked fetch costs
 * when the runtime re-issues it after its 30 s poll timeout (1/30 statements/s per waiter), plus 25 % for noise.
 * Short polling grows by about 20 statements/s per waiter.
 */
final class Targets {
    static final double RE_ISSUE_PER_WAITER = 1.0 / Mode.LONG_POLL_TIMEOUT.toSeconds();

    private Targets() {}

    static List<Target> all(String counterUnit) {
        String perSecond = counterUnit + "/s";
        List<Target> t = new ArrayList<>();
        t.add(Target.atMost("idle-32-waiters", "idle",
                "idle: ≤ 2.5 statements/s with 32 parked waiters (16 orchestrator, 16 worker)",
                "statementsPerSecond", 2.5, perSecond).withCompanion("transactionsPerSecond"));
        t.add(Target.atMost("idle-flat", "idle",
                "idle: flat as waiters grow (per added waiter ≤ one re-issued fetch per 30 s poll timeout, +25 %)",
                "perWaiterSlope", RE_ISSUE_PER_WAITER * 1.25, perSecond + " per waiter"));
        t.add(Target.atMost("wake-worker-p50", "wake", "wake latency (worker queue): p50 ≤ 1 ms",
                "worker.p50", 1, "ms"));
        t.add(Target.atMost("wake-worker-p99", "wake", "wake latency (worker queue): p99 ≤ 5 ms",
                "worker.p99", 5, "ms"));
        t.add(Target.atMost("wake-orchestrator-p50", "wake", "wake latency (orchestrator queue): p50 ≤ 1 ms",
                "orchestrator.p50", 1, "ms"));
        t.add(Target.atMost("wake-orchestrator-p99", "wake", "wake latency (orchestrator queue): p99 ≤ 5 ms",
                "orchestrator.p99", 5, "ms"));
        t.add(Target.atMost("wake-remote-p50", "wake",
                "wake latency (worker queue, enqueued through another provider, handOverAcrossProcesses): p50 ≤ 1 ms",
                "workerFromOtherProvider.p50", 1, "ms"));
        t.add(Target.atMost("wake-remote-p99", "wake",
                "wake latency (worker queue, enqueued through another provider, handOverAcrossProcesses): p99 ≤ 5 ms",
                "workerFromOtherProvider.p99", 5, "ms"));
        t.add(Target.atMost("wake-worker-p50-tight", "wake", "wake latency (worker queue, same process): p50 ≤ 0.5 ms",
                "worker.p50", 0.5, "ms"));
        t.add(Target.atMost("wake-remote-p50-tight", "wake", "wake latency (worker queue, enqueued in another "
                + "process, handOverAcrossProcesses): p50 ≤ 0.6 ms", "workerFromOtherProvider.p50", 0.6, "ms"));
        t.add(Target.atMost("wake-remote-p99-tight", "wake", "wake latency (worker queue, enqueued in another "
                + "process, handOverAcrossProcesses): p99 ≤ 3 ms", "workerFromOtherProvider.p99", 3, "ms"));
        t.add(Target.atMost("timer-p99", "timer", "delayed items: p99 ≤ 5 ms after visible-at",
                "lateness.p99", 5, "ms"));
        t.add(Target.atMost("timer-never-early", "timer", "delayed items: never before visible-at",
                "earlyDeliveries", 0, "items"));
        t.add(Target.atMost("lease-reclaim-p99", "lease", "crashed lease holder: item reclaimed ≤ expiry + 10 ms (p99)",
                "reclaim.p99", 10, "ms"));
        t.add(Target.atMost("wakes-per-item", "wakes-per-item",
                "wakes per item: ≤ 2 waiters woken per claimable item with 64 parked", "wakesPerItem", 2,
                "wakes/item"));
        t.add(Target.atMost("burst-quiet", "burst-quiet",
                "after a 20,000-item burst drained by 32 parked consumers: ≤ 2.5 statements/s per process over the "
                        + "next 30 s",
                "statementsPerSecond", 2.5, perSecond).withCompanion("baselineStatementsPerSecond"));
        t.add(Target.atLeast("throughput-single", "throughput",
                "single-item enqueue → fetch → ack with 4 consumers: ≥ 2,200 items/s", "single.itemsPerSecond",
                2200, "items/s"));
        t.add(Target.atLeast("throughput-single-long-vs-short", "throughput",
                "long polling free when busy: single-item throughput long ÷ short ≥ 1.0 (medians of rounds in "
                        + "alternating order)", "single.itemsPerSecond", 1.0, "× (long ÷ short)").ofRatio());
        t.add(Target.atLeast("throughput-batched", "throughput", "batched (100): ≥ 11,000 items/s",
                "batched.itemsPerSecond", 11000, "items/s"));
        t.add(Target.atLeast("drain-single", "drain",
                "drain, one item per fetch and ack: ≥ 0.42 × the single-row raw-SQL floor of the same run",
                "single.ratioToFloor", 0.42, "× floor"));
        t.add(Target.atLeast("drain-batched", "drain",
                "drain, batched (fetchWorkItems 100 + ackWorkItems): ≥ 0.25 × the 100-row raw-SQL floor",
                "batched.ratioToFloor", 0.25, "× floor"));
        t.add(Target.atLeast("fanout-10ms", "fanout",
                "fan-out of 5, 10 ms activities, 2 orchestrator + 2 worker dispatchers: ≥ 36 orchestrations/s",
                "10ms.orchestrationsPerSecond", 36, "orchestrations/s"));
        t.add(Target.atLeast("fanout-0ms", "fanout",
                "fan-out of 5, 0 ms activities, 8 + 8 dispatchers: ≥ 150 orchestrations/s",
                "0ms.orchestrationsPerSecond", 150, "orchestrations/s"));
        t.add(Target.atLeast("fanout-0ms-long-vs-short", "fanout",
                "long polling free when busy: fan-out with 0 ms activities long ÷ short ≥ 1.0 (medians of rounds in "
                        + "alternating order)", "0ms.orchestrationsPerSecond", 1.0, "× (long ÷ short)").ofRatio());
        t.add(Target.atLeast("notify-overhead", "notify-overhead",
                "notify overhead: enqueue throughput with announcements (triggers enabled, skipped) ≥ 0.95 × with no "
                        + "notifications",
                "enqueuesPerSecond", 0.95, "× (active ÷ disabled)").ofRatio());
        t.add(Target.atLeast("notify-overhead-skipped-triggers", "notify-overhead",
                "notify overhead: installed-but-skipped triggers leave announcer throughput unchanged (≥ 0.95 × the "
                        + "same with the triggers disabled)",
                "skippedTriggersRatio", 0.95, "× (enabled, skipped ÷ disabled)"));
        t.add(Target.atMost("sql-wake-p50", "sql-wake",
                "plain-SQL writer (SQL API) wakes a parked worker fetch: p50 ≤ 1 ms after its commit",
                "worker.p50", 1, "ms"));
        t.add(Target.atMost("sql-wake-p99", "sql-wake",
                "plain-SQL writer (SQL API) wakes a parked worker fetch: p99 ≤ 5 ms after its commit",
                "worker.p99", 5, "ms"));
        t.add(Target.atLeast("metrics-overhead", "metrics-overhead",
                "metrics: single-item throughput with the metrics binder ≥ 0.98 × without it (cost ≤ 2 %)",
                "itemsPerSecond", 0.98, "× (with ÷ without)").ofRatio());
        t.add(Target.atLeast("peer-drain-single", "peers",
                "drain, one job per fetch and ack, 4 consumers: ≥ 1.1 × graphile-worker in the same run (median of the "
                        + "repetitions' ratios)", "drainSingle.ratioToGraphile", 1.1, "× graphile-worker"));
        t.add(Target.atLeast("peer-drain-batched", "peers",
                "drain, batches of 100: ≥ 1.0 × graphile-worker (local queue 100, batched completion) in the same run",
                "drainBatched.ratioToGraphile", 1.0, "× graphile-worker"));
        t.add(Target.atMost("peer-wake-p99", "peers",
                "wake from another connection, 4 parked consumers: p99 ≤ graphile-worker's p99 in the same run",
                "wake.p99RatioToGraphile", 1.0, "× graphile-worker"));
        t.add(Target.atMost("peer-wake-remote-p50", "peers",
                "wake, writer a provider with default settings in another JVM: p50 ≤ 0.5 ms", "wake.p50", 0.5, "ms"));
        t.add(Target.atMost("peer-wake-remote-p99", "peers",
                "wake, writer a provider with default settings in another JVM: p99 ≤ 2 ms", "wake.p99", 2, "ms"));
        t.add(Target.atMost("peer-wake-sporadic-p99", "peers",
                "sporadic wake (a job every 0.2-1.2 s), writer a provider in another JVM: p99 ≤ 5 ms",
                "wakeSporadic.p99", 5, "ms"));
        t.add(Target.atMost("peer-wake-sporadic-sql-p99", "peers",
                "sporadic wake (a job every 0.2-1.2 s), writer plain SQL (enqueue_activity): p99 ≤ 5 ms",
                "wakeSporadicSql.p99", 5, "ms"));
        return t;
    }

    static List<TargetResult> judge(List<Target> targets, Map<String, ScenarioResult> scenarios) {
        List<TargetResult> out = new ArrayList<>();
        for (Target t : targets) {
            out.add(TargetResult.judge(t, scenarios.get(t.scenario())));
        }
        return out;
    }
}
