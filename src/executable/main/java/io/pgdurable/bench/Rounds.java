package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Combines the rounds of one mode of a scenario whose modes alternate round by round: each figure is the median of
 * the rounds that measured it, each latency distribution holds every round's samples, series and details come from
 * the first round, and the detail {@code rounds} lists each round's figures. Ratios between the modes of one round
 * are taken with {@link #roundRatios}.
 */
final class Rounds {
    private Rounds() {}

    /** The order of the modes in round {@code round}: short first in even rounds, long first in odd ones. */
    static List<Mode> order(int round) {
        return round % 2 == 0 ? List.of(Mode.SHORT, Mode.LONG) : List.of(Mode.LONG, Mode.SHORT);
    }

    static ModeResult combine(Mode mode, List<ModeResult> rounds) {
        if (rounds.size() == 1) {
            return rounds.get(0);
        }
        ModeResult first = rounds.get(0);
        ModeResult out = new ModeResult(mode);
        first.metrics().forEach((name, m) -> {
            double[] values = rounds.stream().mapToDouble(r -> r.value(name)).filter(Double::isFinite).toArray();
            out.metric(name, Num.median(values), m.unit(), m.label());
        });
        first.recorders().forEach((name, recorder) -> {
            LatencyRecorder all = new LatencyRecorder();
            for (ModeResult r : rounds) {
                LatencyRecorder each = r.recorders().get(name);
                if (each != null) {
                    all.addAll(each);
                }
            }
            out.latency(name, all);
        });
        first.series().forEach(out::series);
        first.details().forEach(out::detail);
        List<Map<String, Double>> perRound = new ArrayList<>();
        for (ModeResult r : rounds) {
            Map<String, Double> figures = new LinkedHashMap<>();
            r.metrics().forEach((name, m) -> figures.put(name, finiteOrNull(m.value())));
            perRound.add(figures);
        }
        out.detail("rounds", perRound);
        return out;
    }

    private static Double finiteOrNull(double v) {
        return Double.isFinite(v) ? v : null;
    }

    /**
     * Per figure of the long rounds, each round's long ÷ short (rounds paired by index); null where either is not
     * measured or short is 0.
     */
    static Map<String, List<Double>> roundRatios(List<ModeResult> shortRounds, List<ModeResult> longRounds) {
        Map<String, List<Double>> out = new LinkedHashMap<>();
        int n = Math.min(shortRounds.size(), longRounds.size());
        for (String name : longRounds.get(0).metrics().keySet()) {
            List<Double> ratios = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ratios.add(finiteOrNull(ScenarioResult.ratio(longRounds.get(i).value(name),
                        shortRounds.get(i).value(name))));
            }
            out.put(name, ratios);
        }
        return out;
    }
}
