package io.pgdurable.bench;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The human report: targets met or missed, each scenario side by side with its charts, machine and database. */
final class MarkdownReport {
    private MarkdownReport() {}

    static String render(BenchResult r, String chartDir, List<Charts.Chart> charts, String jsonLink) {
        StringBuilder md = new StringBuilder();
        md.append("# pgdurable benchmark report\n\n");
        md.append("Run started ").append(r.startedAt()).append(", ").append(r.profile().name())
                .append(" profile, ").append(String.format(Locale.ROOT, "%.0f", r.seconds())).append(" s; command: `")
                .append(r.options().command()).append("`.\n\n");
        md.append("Database: ").append(r.options().database()).append(r.options().embedded()
                ? " (embedded, throw-away)" : "").append(", ").append(r.server().get("version")).append(". ");
        md.append("Server-side counting: ").append(r.counter().get("source")).append(" (").append(r.unit())
                .append(").");
        if (r.counter().get("fallbackReason") != null) {
            md.append(" pg_stat_statements was not available (").append(r.counter().get("fallbackReason"))
                    .append("), so the counts are transactions from pg_stat_database, which backends report with "
                            + "a lag of up to a second (10 s when idle).");
        }
        md.append('\n');
        if (r.profile().quick()) {
            md.append("\n> **Quick profile**: a few seconds per scenario to check the harness; the figures are not "
                    + "representative and the targets below are judged on them only for completeness.\n");
        }
        Object load = r.machine().get("loadAverage");
        int cores = ((Number) r.machine().get("cores")).intValue();
        if (busy(load, cores)) {
            md.append("\n> **The machine was busy when the run started**: one-minute load average ").append(load)
                    .append(" on ").append(cores).append(" cores. Other work may have competed with this run; the "
                            + "load at the start and end of each scenario is listed with it (those values include "
                            + "the benchmark's own load).\n");
        }
        if (jsonLink != null) {
            md.append("\nMachine-readable results: ").append(jsonLink.startsWith("../") || jsonLink.startsWith("/")
                    ? "`" + jsonLink + "` (written by this run, outside the report's directory)"
                    : "[" + jsonLink + "](" + jsonLink + ")").append(".\n");
        }
        md.append("\nEvery scenario runs short polling and long polling one after the other on the same database, "
                + "each on a schema of its own. **short** = ").append(Mode.SHORT.label()).append("; **long** = ")
                .append(Mode.LONG.label()).append(". Ratios are long ÷ short.\n");

        md.append("\n## Targets\n\n");
        md.append(r.summary()).append(". Judged on the long-polling figure (for notify overhead: the ratio).\n\n");
        md.append("| status | target | measured (long) | short polling | limit | how far |\n");
        md.append("|---|---|---|---|---|---|\n");
        for (TargetResult t : r.targets()) {
            md.append("| ").append(status(t)).append(" | ").append(cell(t.target().text())).append(" | ")
                    .append(t.status() == TargetResult.Status.NOT_MEASURED ? "—"
                            : Num.text(t.measured()) + " " + t.target().unit()).append(" | ")
                    .append(t.target().ratio() || Double.isNaN(t.shortMeasured()) ? "—"
                            : Num.text(t.shortMeasured()) + " " + t.target().unit()).append(" | ")
                    .append(t.target().comparison()).append(" | ").append(cell(t.distance())).append(" |\n");
        }
        if (!r.failures().isEmpty()) {
            md.append("\n**Failed scenarios**:\n\n");
            r.failures().forEach((k, v) -> md.append("- `").append(k).append("`: ").append(cell(v)).append('\n'));
        }

        md.append("\n## Scenarios\n");
        for (ScenarioResult s : r.scenarios()) {
            scenario(md, s, r.load(s.name()), chartDir, charts);
        }

        md.append("\n## Machine and database\n\n| | |\n|---|---|\n");
        for (Map.Entry<String, Object> e : r.machine().entrySet()) {
            md.append("| ").append(e.getKey()).append(" | ").append(value(e.getKey(), e.getValue())).append(" |\n");
        }
        md.append("| PostgreSQL | ").append(cell(String.valueOf(r.server().get("version")))).append(" |\n");
        md.append("| other sessions on the database at start | ").append(r.server().get("otherSessionsAtStart"))
                .append(" |\n");
        Object settings = r.server().get("settings");
        if (settings instanceof Map<?, ?> map) {
            map.forEach((k, v) -> md.append("| `").append(k).append("` | ").append(cell(String.valueOf(v)))
                    .append(" |\n"));
        }
        md.append(HOW_TO_READ);
        return md.toString();
    }

    private static void scenario(StringBuilder md, ScenarioResult s, double[] load, String chartDir,
                                 List<Charts.Chart> charts) {
        md.append("\n### ").append(s.title()).append(" (`").append(s.name()).append("`)\n\n");
        md.append(s.description()).append("\n\n");
        md.append("Run: ");
        boolean first = true;
        for (Map.Entry<String, Object> e : s.settings().entrySet()) {
            md.append(first ? "" : ", ").append(e.getKey()).append(" ").append(compact(e.getValue()));
            first = false;
        }
        md.append(String.format(Locale.ROOT, "; took %.0f s", s.seconds()));
        if (load != null) {
            md.append("; machine load average ").append(Num.text(load[0])).append(" → ").append(Num.text(load[1]))
                    .append(" (this run included)");
            if (load.length > 2 && !Double.isNaN(load[2])) {
                md.append("; server checkpoints started meanwhile: ").append((long) load[2]);
            }
        }
        md.append(".\n\n");
        md.append(s.name().equals(PeersScenario.NAME)
                ? "| figure | graphile-worker | pgdurable | pgdurable ÷ graphile-worker |\n|---|---|---|---|\n"
                : "| figure | short | long | long ÷ short |\n|---|---|---|---|\n");
        for (Map.Entry<String, Metric> e : s.longMode().metrics().entrySet()) {
            Metric m = e.getValue();
            Metric sm = s.shortMode().metrics().get(e.getKey());
            md.append("| ").append(cell(m.label())).append(" (").append(m.unit()).append(") | ")
                    .append(sm == null ? "—" : Num.text(sm.value())).append(" | ").append(Num.text(m.value()))
                    .append(" | ").append(ratio(s.ratio(e.getKey()))).append(" |\n");
        }
        for (Map.Entry<String, LatencySummary> e : s.longMode().latencies().entrySet()) {
            LatencySummary l = e.getValue();
            LatencySummary sl = s.shortMode().latencies().get(e.getKey());
            if (l.count() == 0 && (sl == null || sl.count() == 0)) {
                continue;
            }
            for (String f : new String[] {"p50", "p99"}) {
                md.append("| ").append(e.getKey()).append(' ').append(f).append(" (ms) | ")
                        .append(sl == null ? "—" : Num.text(sl.field(f))).append(" | ").append(Num.text(l.field(f)))
                        .append(" | ").append(ratio(s.ratio(e.getKey() + "." + f))).append(" |\n");
            }
            md.append("| ").append(e.getKey()).append(" samples | ").append(sl == null ? "—" : sl.count())
                    .append(" | ").append(l.count()).append(" | |\n");
        }
        for (String n : s.notes()) {
            md.append("\n> ").append(cell(n)).append('\n');
        }
        details(md, s);
        if (chartDir != null) {
            for (Charts.Chart c : charts) {
                if (c.scenario().equals(s.name())) {
                    md.append("\n![").append(cell(c.caption())).append("](").append(chartDir).append('/')
                            .append(c.file()).append(")\n");
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static void details(StringBuilder md, ScenarioResult s) {
        for (Map.Entry<String, Object> e : s.longMode().details().entrySet()) {
            if (!e.getKey().endsWith("topStatements") || !(e.getValue() instanceof List<?> list) || list.isEmpty()) {
                continue;
            }
            String part = e.getKey().equals("topStatements") ? ""
                    : " (" + e.getKey().substring(0, e.getKey().indexOf('.')) + ")";
            md.append("\nWhat the server executed most in the long-polling window").append(part)
                    .append(":\n\n| calls | statement |\n|---|---|\n");
            for (Object o : list) {
                Map<String, Object> m = (Map<String, Object>) o;
                md.append("| ").append(m.get("calls")).append(" | `").append(cell(String.valueOf(m.get("statement")))
                        .replace("`", "'")).append("` |\n");
            }
        }
        Object signals = s.longMode().details().get("longPollSignals");
        if (signals instanceof Map<?, ?> map && !map.isEmpty()) {
            md.append("\nLong-poll machinery in the window: ").append(compact(map)).append(".\n");
        }
        for (Mode m : Mode.values()) {
            for (Map.Entry<String, Object> e : s.mode(m).details().entrySet()) {
                if (!e.getKey().endsWith("waitEvents") || !(e.getValue() instanceof Map<?, ?> w)) {
                    continue;
                }
                String part = e.getKey().equals("waitEvents") ? "" : " (" + e.getKey().substring(0,
                        e.getKey().indexOf('.')) + ")";
                String which = s.name().equals("notify-overhead")
                        ? (m == Mode.SHORT ? "no notifications" : "announcer") : m.key() + " polling";
                md.append("\nWait events of the active provider backends, ").append(which).append(part)
                        .append(": ").append(compact(w.get("activeBackendObservations"))).append(" (")
                        .append(w.get("samples")).append(" samples).\n");
            }
        }
    }

    private static boolean busy(Object load, int cores) {
        return load instanceof Number n && n.doubleValue() > Math.max(1.0, cores * 0.75);
    }

    private static String status(TargetResult t) {
        switch (t.status()) {
            case MET: return "✅ met";
            case MISSED: return "❌ missed";
            default: return "⚪ not measured";
        }
    }

    private static String ratio(double r) {
        return Double.isNaN(r) ? "—" : "×" + Num.text(r);
    }

    private static String value(String key, Object v) {
        if (v instanceof Number n && key.endsWith("Bytes")) {
            return String.format(Locale.ROOT, "%.1f GiB", n.doubleValue() / (1L << 30));
        }
        return cell(String.valueOf(v));
    }

    private static String compact(Object v) {
        if (v instanceof Map<?, ?> map) {
            StringBuilder sb = new StringBuilder();
            map.forEach((k, x) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ').append(compact(x)));
            return sb.toString();
        }
        if (v instanceof List<?> list) {
            StringBuilder sb = new StringBuilder("[");
            for (Object o : list) {
                sb.append(sb.length() == 1 ? "" : o instanceof Map ? "; " : ", ")
                        .append(o instanceof Map ? "(" + compact(o) + ")" : compact(o));
            }
            return sb.append(']').toString();
        }
        return cell(String.valueOf(v));
    }

    private static String cell(String s) {
        return s == null ? "" : s.replace("|", "\\|").replace("\n", " ");
    }

    private static final String HOW_TO_READ = "\n## How to read this report\n\n"
            + "- **Targets** are judged on the long-polling figure; the short-polling figure stands beside it for "
            + "comparison. \"How far\" is the headroom of a met target or the shortfall of a missed one.\n"
            + "- **Ratios** are long ÷ short: below 1 long polling needs less (statements, latency), above 1 it "
            + "does more (throughput).\n"
            + "- **Latency charts** are cumulative distributions: for a latency on the x axis (log scale), the "
            + "percentage of samples at or below it. The curve crossing the p50 line is the median, the p99 line "
            + "the 99th percentile; further left is faster, a steep curve is steady, a long flat tail at the top is "
            + "jitter. Red dashed lines are targets.\n"
            + "- **Idle charts** use a log y axis: short polling costs hundreds of statements per second, long "
            + "polling a few. In the timeline, the regular small steps of long polling are the one-second fallback "
            + "probe and the listener heartbeat; spikes are parked fetches re-issued after their 30 s poll timeout.\n"
            + "- **Statements** are counted on the server for the whole database (the provider's pools, its "
            + "listener, the benchmark's producers), never by the client; the counter's own reads are left out.\n";
}
