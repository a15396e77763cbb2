package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one scenario measured in one mode: named figures, latency distributions, time series for charts and free-form
 * details (settings, statement breakdowns, signal counts). Filled by one scenario thread, read after it finished.
 */
final class ModeResult {
    private final Mode mode;
    private final Map<String, Metric> metrics = new LinkedHashMap<>();
    private final Map<String, LatencySummary> latencies = new LinkedHashMap<>();
    private final Map<String, LatencyRecorder> recorders = new LinkedHashMap<>();
    private final Map<String, List<double[]>> series = new LinkedHashMap<>();
    private final Map<String, Object> details = new LinkedHashMap<>();

    ModeResult(Mode mode) {
        this.mode = mode;
    }

    Mode mode() {
        return mode;
    }

    ModeResult metric(String name, double value, String unit, String label) {
        metrics.put(name, new Metric(value, unit, label));
        return this;
    }

    ModeResult latency(String name, LatencyRecorder recorder) {
        latencies.put(name, recorder.summary());
        recorders.put(name, recorder);
        return this;
    }

    ModeResult series(String name, List<double[]> points) {
        series.put(name, new ArrayList<>(points));
        return this;
    }

    ModeResult detail(String name, Object value) {
        details.put(name, value);
        return this;
    }

    Map<String, Metric> metrics() {
        return metrics;
    }

    /** The recorders behind {@link #latencies()}, for combining rounds. */
    Map<String, LatencyRecorder> recorders() {
        return recorders;
    }

    Map<String, LatencySummary> latencies() {
        return latencies;
    }

    Map<String, List<double[]>> series() {
        return series;
    }

    Map<String, Object> details() {
        return details;
    }

    /**
     * A figure by name: a metric, or {@code <latency>.<field>} of a distribution ({@code worker.p99}); NaN when
     * absent.
     */
    double value(String name) {
        Metric m = metrics.get(name);
        if (m != null) {
            return m.value();
        }
        int dot = name.lastIndexOf('.');
        if (dot > 0) {
            LatencySummary s = latencies.get(name.substring(0, dot));
            if (s != null) {
                return s.field(name.substring(dot + 1));
            }
        }
        return Double.NaN;
    }
}
