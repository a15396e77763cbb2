package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Both modes of one scenario, what was run, and the ratios between them ({@code long ÷ short} for every figure both
 * modes report).
 *
 * @param settings what was run (waiters, durations, sample counts), for the report
 * @param notes    anything the reader must know (a part that could not run, a measurement caveat)
 */
record ScenarioResult(String name, String title, String description, Map<String, Object> settings,
                      ModeResult shortMode, ModeResult longMode, List<String> notes, double seconds) {

    ModeResult mode(Mode mode) {
        return mode == Mode.SHORT ? shortMode : longMode;
    }

    /** Names of every figure reported by both modes, metrics first, then latency medians and p99s. */
    List<String> comparableFigures() {
        List<String> names = new ArrayList<>();
        for (String m : shortMode.metrics().keySet()) {
            if (longMode.metrics().containsKey(m)) {
                names.add(m);
            }
        }
        for (String l : shortMode.latencies().keySet()) {
            if (longMode.latencies().containsKey(l)) {
                names.add(l + ".p50");
                names.add(l + ".p99");
            }
        }
        return names;
    }

    /** {@code long ÷ short} of a figure; NaN when either is missing or the short figure is zero. */
    double ratio(String figure) {
        return ratio(longMode.value(figure), shortMode.value(figure));
    }

    /** {@code longValue ÷ shortValue}; NaN when either is missing or the short value is zero. */
    static double ratio(double longValue, double shortValue) {
        if (Double.isNaN(shortValue) || Double.isNaN(longValue) || shortValue == 0) {
            return Double.NaN;
        }
        return longValue / shortValue;
    }

    Map<String, Double> ratios() {
        Map<String, Double> r = new LinkedHashMap<>();
        for (String f : comparableFigures()) {
            r.put(f, ratio(f));
        }
        return r;
    }
}
