package io.pgdurable.bench;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A target judged against a run: met or missed with the measured figure and how far it is from the limit, or not
 * measured (with why). The short-polling figure is kept beside it for comparison.
 */
record TargetResult(Target target, Status status, double measured, double shortMeasured, String reason,
                    Metric companion) {

    TargetResult(Target target, Status status, double measured, double shortMeasured, String reason) {
        this(target, status, measured, shortMeasured, reason, null);
    }

    enum Status { MET, MISSED, NOT_MEASURED }

    static TargetResult judge(Target t, ScenarioResult s) {
        if (s == null) {
            return new TargetResult(t, Status.NOT_MEASURED, Double.NaN, Double.NaN,
                    "scenario " + t.scenario() + " was not run");
        }
        double measured = t.ratio() ? s.ratio(t.figure()) : s.longMode().value(t.figure());
        double shortValue = t.ratio() ? Double.NaN : s.shortMode().value(t.figure());
        if (Double.isNaN(measured)) {
            String why = s.notes().stream().filter(n -> n.startsWith(t.figure().split("\\.")[0]))
                    .findFirst().orElse("figure " + t.figure() + " was not measured");
            return new TargetResult(t, Status.NOT_MEASURED, measured, shortValue, why);
        }
        boolean met = t.atMost() ? measured <= t.limit() : measured >= t.limit();
        Metric companion = t.companion() == null ? null : s.longMode().metrics().get(t.companion());
        return new TargetResult(t, met ? Status.MET : Status.MISSED, measured, shortValue, null, companion);
    }

    /** How far from the limit, in words, and the companion figure when there is one. */
    String distance() {
        String d = distanceOnly();
        return companion == null ? d : d + "; also measured: " + Num.text(companion.value()) + " "
                + companion.unit() + " (" + companion.label() + ")";
    }

    /** How far from the limit, in words: the headroom of a met target, the shortfall of a missed one. */
    private String distanceOnly() {
        if (status == Status.NOT_MEASURED) {
            return reason;
        }
        double limit = target.limit();
        String unit = target.unit();
        double diff = Math.abs(measured - limit);
        if (limit == 0) {
            return status == Status.MET ? "exactly as required" : "missed by " + Num.text(diff) + " " + unit;
        }
        double factor = target.atMost() ? measured / limit : limit / measured;
        if (status == Status.MET) {
            double headroom = target.atMost() ? (limit - measured) / limit : (measured - limit) / limit;
            return String.format(Locale.ROOT, "met with %s %s to spare (%.0f %% %s the limit)", Num.text(diff),
                    unit, headroom * 100, target.atMost() ? "below" : "above");
        }
        return String.format(Locale.ROOT, "missed by %s %s (%s× %s)", Num.text(diff), unit, Num.text(factor),
                target.atMost() ? "the limit" : "short of the limit");
    }

    Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", target.id());
        m.put("scenario", target.scenario());
        m.put("target", target.text());
        m.put("figure", target.figure());
        m.put("of", target.ratio() ? "ratio long/short" : "long");
        m.put("comparison", target.atMost() ? "<=" : ">=");
        m.put("limit", Num.round(target.limit()));
        m.put("unit", target.unit());
        m.put("measured", Num.round(measured));
        m.put("status", status.name().toLowerCase(Locale.ROOT).replace('_', '-'));
        m.put("met", status == Status.NOT_MEASURED ? null : status == Status.MET);
        m.put("distance", distance());
        if (!target.ratio()) {
            m.put("shortPolling", Num.round(shortMeasured));
        }
        if (companion != null) {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("figure", target.companion());
            c.put("measured", Num.round(companion.value()));
            c.put("unit", companion.unit());
            c.put("label", companion.label());
            m.put("alsoMeasured", c);
        }
        return m;
    }
}
