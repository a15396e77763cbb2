package io.pgdurable.chaos;

import io.pgdurable.postgres.JdbcUrls;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** What a chaos run did and found, and its one-screen summary. */
public record ChaosReport(ChaosSettings settings, String runId, long loadNanos, boolean drained, long drainNanos,
                          Ledger.Verdict verdict, FaultInjector.Counts faults, ErrorTally.Snapshot errors,
                          long listenerLost, long listenerFailedAttempts, long listenerReconnects,
                          List<String> crashes) {

    /** No item lost, none delivered twice without a failed ack to explain it, none from nowhere, no crash. */
    public boolean passed() {
        return verdict.passed() && drained && crashes.isEmpty();
    }

    public long lost() {
        return verdict.lost();
    }

    public long unexplainedDuplicates() {
        return verdict.duplicatesUnexplained();
    }

    public long listenerKills() {
        return faults.listenerKills();
    }

    public long poolKills() {
        return faults.poolKills();
    }

    public long relayPauses() {
        return faults.pauses();
    }

    /** The summary, one line per fact, stable labels so scripts can read it. */
    public List<String> summary() {
        Ledger.Verdict v = verdict;
        List<String> lines = new ArrayList<>();
        lines.add("chaos run " + runId + " on " + JdbcUrls.redact(settings.jdbcUrl()) + ", schema "
                + settings.schema() + ", " + seconds(loadNanos) + " of load");
        lines.add("load:        " + settings.producers() + " producers at " + settings.itemsPerSecond()
                + " items/s in all, " + settings.consumers() + " long-polling consumers (listener "
                + settings.listenerDriver() + ", lease " + Workload.LEASE.toSeconds() + " s)");
        lines.add("produced:    " + v.committed() + " committed (" + Math.round(v.committed() / (loadNanos / 1e9))
                + "/s), " + v.ambiguous() + " ambiguous (enqueue failed; "
                + v.ambiguousDelivered() + " of them delivered)");
        lines.add("consumed:    " + v.consumed() + " items in " + v.deliveries() + " deliveries; "
                + (drained ? "queue drained " + seconds(drainNanos) + " after the load stopped"
                : "queue NOT drained within " + ChaosRun.DRAIN_LIMIT.toSeconds() + " s"));
        lines.add("faults:      listener kills " + faults.listenerKills() + " (" + faults.listenerBackends()
                + " backends), pool kills " + faults.poolKills() + " (" + faults.poolBackends() + " backends), "
                + "relay pauses " + faults.pauses() + " (" + String.format(Locale.ROOT, "%.1f",
                faults.pausedMillis() / 1000.0) + " s paused)" + (faults.missedKills() > 0 ? ", "
                + faults.missedKills() + " kills found no backend" : "") + (faults.failures() > 0 ? ", "
                + faults.failures() + " kills failed" : ""));
        lines.add("listener:    lost its connection " + listenerLost + " times, " + listenerFailedAttempts
                + " connection attempts failed, listening again " + listenerReconnects + " times");
        lines.add("pickup gap:  worst " + millis(v.worstGapNanos()) + (v.worstGapItem() >= 0 ? " (item "
                + v.worstGapItem() + ")" : "") + ", p99 " + millis(v.p99GapNanos()) + ", median "
                + millis(v.medianGapNanos()) + " (enqueue commit to first fetch)");
        lines.add("errors:      retryable " + errors.retryableTotal() + breakdown(errors.retryable()) + ", permanent "
                + errors.permanentTotal() + breakdown(errors.permanent()));
        for (String m : errors.permanentMessages()) {
            lines.add("             permanent: " + m);
        }
        lines.add("lost:        " + v.lost() + (v.lost() > 0 ? " (first: " + v.lostItems() + ")" : ""));
        lines.add("duplicated:  " + (v.duplicatesExplained() + v.duplicatesUnexplained()) + " (explained by "
                + v.failedAcks() + " failed acks: " + v.duplicatesExplained() + ", unexplained: "
                + v.duplicatesUnexplained() + (v.duplicatesUnexplained() > 0 ? " " + v.unexplainedItems() : "")
                + ")");
        if (v.phantom() > 0) {
            lines.add("phantom:     " + v.phantom() + " delivered items were never enqueued");
        }
        for (String c : crashes) {
            lines.add("crashed:     " + c);
        }
        lines.add("result:      " + (passed() ? "PASS" : "FAIL") + (passed() ? "" : " (ledger rows kept in "
                + settings.schema() + "." + Ledger.TABLE + ", run_id '" + runId + "')"));
        return lines;
    }

    private static String breakdown(Map<String, Long> counts) {
        if (counts.isEmpty()) {
            return "";
        }
        return counts.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                .collect(Collectors.joining(", ", " (", ")"));
    }

    private static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.0f ms", nanos / 1e6);
    }
}
