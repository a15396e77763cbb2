package io.pgdurable.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A finished run: environment, every scenario's results, failures and the judged targets; writes the reports. */
public final class BenchResult {
    private final Instant startedAt;
    private final double seconds;
    private final Profile profile;
    private final Bench.Options options;
    private final Map<String, Object> machine;
    private final Map<String, Object> server;
    private final Map<String, Object> counter;
    private final List<ScenarioResult> scenarios;
    private final Map<String, String> failures;
    private final List<TargetResult> targets;
    private final Map<String, double[]> load;

    BenchResult(Instant startedAt, double seconds, Profile profile, Bench.Options options, Map<String, Object> machine,
                Map<String, Object> server, Map<String, Object> counter, List<ScenarioResult> scenarios,
                Map<String, String> failures, List<TargetResult> targets, Map<String, double[]> load) {
        this.startedAt = startedAt;
        this.seconds = seconds;
        this.profile = profile;
        this.options = options;
        this.machine = machine;
        this.server = server;
        this.counter = counter;
        this.scenarios = scenarios;
        this.failures = failures;
        this.targets = targets;
        this.load = load;
    }

    /** The machine's one-minute load average when a scenario started and ended (other work on the machine shows). */
    double[] load(String scenario) {
        return load.get(scenario);
    }

    Instant startedAt() {
        return startedAt;
    }

    double seconds() {
        return seconds;
    }

    Profile profile() {
        return profile;
    }

    Bench.Options options() {
        return options;
    }

    Map<String, Object> machine() {
        return machine;
    }

    Map<String, Object> server() {
        return server;
    }

    Map<String, Object> counter() {
        return counter;
    }

    List<ScenarioResult> scenarios() {
        return scenarios;
    }

    ScenarioResult scenario(String name) {
        return scenarios.stream().filter(s -> s.name().equals(name)).findFirst().orElse(null);
    }

    /** What one server count is: {@code statements} or, in the fallback, {@code transactions}. */
    String unit() {
        return String.valueOf(counter.get("unit"));
    }

    /** Scenario name → why it failed. */
    public Map<String, String> failures() {
        return failures;
    }

    List<TargetResult> targets() {
        return targets;
    }

    public long count(String status) {
        return targets.stream().filter(t -> t.status().name().equalsIgnoreCase(status.replace('-', '_'))).count();
    }

    public String summary() {
        return count("met") + " target(s) met, " + count("missed") + " missed, " + count("not-measured")
                + " not measured" + (failures.isEmpty() ? "" : "; failed scenarios: " + failures.keySet());
    }

    /**
     * Fails, with a message naming the packages to install, when this Java cannot draw the report's charts (it finds
     * no fonts). A caller checks before a run of minutes rather than after it.
     */
    public static void checkChartsCanBeDrawn() {
        Charts.requireFonts();
    }

    /**
     * Writes the JSON (when {@code json} is not null) and the Markdown report with its PNG charts in a directory
     * beside it, {@code <report name>-charts/} (when {@code report} is not null). Returns the files written.
     */
    public List<Path> write(Path json, Path report) throws IOException {
        List<Path> written = new ArrayList<>();
        List<Charts.Chart> charts = List.of();
        String chartDir = null;
        if (report != null) {
            Charts.requireFonts();
            charts = Charts.render(this);
            Path abs = report.toAbsolutePath();
            String base = abs.getFileName().toString().replaceFirst("\\.[^.]*$", "");
            chartDir = base + "-charts";
            Path dir = abs.resolveSibling(chartDir);
            Files.createDirectories(dir);
            try (var old = Files.list(dir)) { // charts of an earlier run that this one does not draw
                for (Path f : old.filter(f -> f.getFileName().toString().endsWith(".png")).toList()) {
                    Files.delete(f);
                }
            }
            for (Charts.Chart c : charts) {
                Path f = dir.resolve(c.file());
                c.writePng(f);
                written.add(f);
            }
        }
        if (json != null) {
            Path abs = json.toAbsolutePath();
            if (abs.getParent() != null) {
                Files.createDirectories(abs.getParent());
            }
            Files.writeString(abs, JsonReport.render(this, chartDir, charts), StandardCharsets.UTF_8);
            written.add(abs);
        }
        if (report != null) {
            Path abs = report.toAbsolutePath();
            Files.writeString(abs, MarkdownReport.render(this, chartDir, charts,
                    json == null ? null : relative(abs, json.toAbsolutePath())), StandardCharsets.UTF_8);
            written.add(abs);
        }
        return written;
    }

    private static String relative(Path report, Path json) {
        try {
            return report.getParent().relativize(json).toString().replace('\\', '/');
        } catch (IllegalArgumentException e) {
            return json.toString();
        }
    }
}
