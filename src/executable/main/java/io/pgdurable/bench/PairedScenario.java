package io.pgdurable.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * A scenario that runs the same measurement once per mode, short polling first, each on a schema of its own, one
 * after the other in the same run (so they never compete for the machine); or, with {@link #rounds} above one, in
 * rounds whose order alternates, so that drift of the machine during the run falls on both modes alike.
 */
abstract class PairedScenario implements Scenario {
    protected final List<String> notes = new ArrayList<>();
    private int round;

    /** What the scenario measures and how, for the report. */
    abstract String description();

    /** What was run with this profile (counts, durations), for the report and JSON. */
    abstract Map<String, Object> settings(Profile profile);

    abstract ModeResult runMode(Mode mode, BenchContext ctx) throws Exception;

    /**
     * How many rounds of short and long to run; more than one alternates the order round by round (short first in
     * even rounds) and reports each figure as the median of the rounds (see {@link Rounds}).
     */
    int rounds(Profile profile) {
        return 1;
    }

    /** A suffix that gives each round's schemas names of their own: empty in the first round. */
    String roundSuffix() {
        return round == 0 ? "" : "_r" + (round + 1);
    }

    @Override
    public ScenarioResult run(BenchContext ctx) throws Exception {
        long start = System.nanoTime();
        int rounds = rounds(ctx.profile());
        Map<Mode, List<ModeResult>> byMode = new EnumMap<>(Mode.class);
        for (round = 0; round < rounds; round++) {
            for (Mode mode : Rounds.order(round)) {
                String which = rounds == 1 ? "" : " (round " + (round + 1) + " of " + rounds + ")";
                ctx.progress().line("%s: %s%s ...", name(), mode.label(), which);
                ModeResult r = runMode(mode, ctx);
                ctx.progress().line("%s: %s%s done: %s", name(), mode.key(), which, headline(r));
                byMode.computeIfAbsent(mode, m -> new ArrayList<>()).add(r);
            }
        }
        List<ModeResult> shortRounds = byMode.get(Mode.SHORT);
        List<ModeResult> longRounds = byMode.get(Mode.LONG);
        ModeResult longResult = Rounds.combine(Mode.LONG, longRounds);
        if (rounds > 1) {
            longResult.detail("roundRatios", Rounds.roundRatios(shortRounds, longRounds));
        }
        return new ScenarioResult(name(), title(), description(), settings(ctx.profile()),
                Rounds.combine(Mode.SHORT, shortRounds), longResult, List.copyOf(notes),
                (System.nanoTime() - start) / 1e9);
    }

    /** A one-line summary of a mode's main figures for the progress output. */
    static String headline(ModeResult r) {
        StringBuilder sb = new StringBuilder();
        r.metrics().forEach((k, m) -> {
            if (sb.length() < 160) {
                sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ').append(Num.text(m.value())).append(' ')
                        .append(m.unit());
            }
        });
        r.latencies().forEach((k, s) -> {
            if (sb.length() < 240) {
                sb.append(sb.length() == 0 ? "" : ", ").append(k).append(" p50 ").append(Num.text(s.p50Ms()))
                        .append(" ms p99 ").append(Num.text(s.p99Ms())).append(" ms");
            }
        });
        return sb.toString();
    }
}
