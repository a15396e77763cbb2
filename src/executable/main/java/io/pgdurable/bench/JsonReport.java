package io.pgdurable.bench;

import io.pgdurable.spi.Json;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The machine-readable result: every scenario with both modes and their ratios, every target, the environment. */
final class JsonReport {
    static final int FORMAT = 1;
    private static final double[] PERCENTILES = {1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9};

    private JsonReport() {}

    static String render(BenchResult r, String chartDir, List<Charts.Chart> charts) {
        return pretty(toJson(r, chartDir, charts));
    }

    static Map<String, Object> toJson(BenchResult r, String chartDir, List<Charts.Chart> charts) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", FORMAT);
        m.put("tool", "pgdurable bench");
        m.put("startedAt", r.startedAt().toString());
        m.put("durationSeconds", Num.round(r.seconds()));
        m.put("profile", r.profile().name());
        m.put("command", r.options().command());
        m.put("machine", r.machine());
        Map<String, Object> db = new LinkedHashMap<>();
        db.put("url", r.options().database());
        db.put("embedded", r.options().embedded());
        db.putAll(r.server());
        db.put("statementCounter", r.counter());
        m.put("database", db);
        Map<String, Object> modes = new LinkedHashMap<>();
        for (Mode mode : Mode.values()) {
            modes.put(mode.key(), mode.label());
        }
        m.put("modes", modes);
        List<Object> targets = new ArrayList<>();
        r.targets().forEach(t -> targets.add(t.toJson()));
        m.put("targets", targets);
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("met", r.count("met"));
        summary.put("missed", r.count("missed"));
        summary.put("notMeasured", r.count("not-measured"));
        m.put("targetSummary", summary);
        Map<String, Object> scenarios = new LinkedHashMap<>();
        for (ScenarioResult s : r.scenarios()) {
            Map<String, Object> sm = scenario(s);
            double[] load = r.load(s.name());
            if (load != null) {
                Map<String, Object> lm = new LinkedHashMap<>();
                lm.put("start", Num.round(load[0]));
                lm.put("end", Num.round(load[1]));
                sm.put("machineLoadAverage", lm);
                if (load.length > 2 && !Double.isNaN(load[2])) {
                    sm.put("serverCheckpointsStarted", (long) load[2]);
                }
            }
            scenarios.put(s.name(), sm);
        }
        m.put("scenarios", scenarios);
        m.put("failures", r.failures());
        List<Object> files = new ArrayList<>();
        if (chartDir != null) {
            for (Charts.Chart c : charts) {
                Map<String, Object> cm = new LinkedHashMap<>();
                cm.put("file", chartDir + "/" + c.file());
                cm.put("scenario", c.scenario());
                cm.put("caption", c.caption());
                files.add(cm);
            }
        }
        m.put("charts", files);
        return m;
    }

    private static Map<String, Object> scenario(ScenarioResult s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("title", s.title());
        m.put("description", s.description());
        m.put("settings", s.settings());
        m.put("seconds", Num.round(s.seconds()));
        m.put("notes", s.notes());
        m.put(Mode.SHORT.key(), mode(s.shortMode()));
        m.put(Mode.LONG.key(), mode(s.longMode()));
        Map<String, Object> ratios = new LinkedHashMap<>();
        s.ratios().forEach((k, v) -> ratios.put(k, Num.round(v)));
        m.put("ratiosLongToShort", ratios);
        return m;
    }

    private static Map<String, Object> mode(ModeResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        Map<String, Object> metrics = new LinkedHashMap<>();
        r.metrics().forEach((k, v) -> {
            Map<String, Object> mm = new LinkedHashMap<>();
            mm.put("value", Num.round(v.value()));
            mm.put("unit", v.unit());
            mm.put("label", v.label());
            metrics.put(k, mm);
        });
        m.put("metrics", metrics);
        Map<String, Object> latencies = new LinkedHashMap<>();
        r.latencies().forEach((k, v) -> {
            Map<String, Object> lm = v.toJson();
            Map<String, Object> pct = new LinkedHashMap<>();
            for (double p : PERCENTILES) {
                pct.put(p == Math.rint(p) ? String.valueOf((long) p) : String.valueOf(p),
                        Num.round(v.percentileMs(p)));
            }
            lm.put("percentiles", pct);
            latencies.put(k, lm);
        });
        m.put("latencies", latencies);
        Map<String, Object> series = new LinkedHashMap<>();
        r.series().forEach((k, pts) -> {
            List<Object> out = new ArrayList<>();
            for (double[] p : pts) {
                out.add(java.util.Arrays.asList(Num.round(p[0]), Num.round(p[1])));
            }
            series.put(k, out);
        });
        m.put("series", series);
        m.put("details", r.details());
        return m;
    }

    /** Indented JSON (two spaces); scalars and short arrays of numbers on one line. */
    static String pretty(Object value) {
        StringBuilder sb = new StringBuilder();
        pretty(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void pretty(StringBuilder sb, Object value, int depth) {
        if (value instanceof Map<?, ?> map) {
            if (map.isEmpty()) {
                sb.append("{}");
                return;
            }
            sb.append("{\n");
            int i = 0;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                indent(sb, depth + 1);
                Json.writeString(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                pretty(sb, e.getValue(), depth + 1);
                sb.append(++i < map.size() ? ",\n" : "\n");
            }
            indent(sb, depth);
            sb.append('}');
        } else if (value instanceof List<?> list) {
            boolean flat = list.stream().allMatch(v -> v == null || v instanceof Number || v instanceof List<?> l
                    && l.stream().allMatch(x -> x == null || x instanceof Number));
            if (list.isEmpty()) {
                sb.append("[]");
                return;
            }
            if (flat) {
                sb.append('[');
                for (int i = 0; i < list.size(); i++) {
                    sb.append(i == 0 ? "" : ",");
                    pretty(sb, list.get(i), depth + 1);
                }
                sb.append(']');
                return;
            }
            sb.append("[\n");
            for (int i = 0; i < list.size(); i++) {
                indent(sb, depth + 1);
                pretty(sb, list.get(i), depth + 1);
                sb.append(i + 1 < list.size() ? ",\n" : "\n");
            }
            indent(sb, depth);
            sb.append(']');
        } else if (value instanceof Double d && (d.isNaN() || d.isInfinite())) {
            sb.append("null");
        } else {
            Json.write(sb, value);
        }
    }

    private static void indent(StringBuilder sb, int depth) {
        sb.append("  ".repeat(depth));
    }
}
