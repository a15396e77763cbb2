package io.pgdurable.bench;

/**
 * One performance target: a figure of one scenario compared with a limit.
 *
 * @param id        stable key in the JSON
 * @param scenario  the scenario that measures it
 * @param text      the target as the report states it
 * @param figure    the figure's name in the scenario's results ({@code statementsPerSecond}, {@code worker.p99})
 * @param ratio     true when the figure is the {@code long ÷ short} ratio rather than the long-mode value
 * @param atMost    true for "≤ limit", false for "≥ limit"
 * @param limit     the limit
 * @param unit      the unit of figure and limit
 * @param companion a second long-mode figure shown beside the judged one (not judged), or null
 */
record Target(String id, String scenario, String text, String figure, boolean ratio, boolean atMost, double limit,
              String unit, String companion) {

    static Target atMost(String id, String scenario, String text, String figure, double limit, String unit) {
        return new Target(id, scenario, text, figure, false, true, limit, unit, null);
    }

    static Target atLeast(String id, String scenario, String text, String figure, double limit, String unit) {
        return new Target(id, scenario, text, figure, false, false, limit, unit, null);
    }

    Target ofRatio() {
        return new Target(id, scenario, text, figure, true, atMost, limit, unit, companion);
    }

    /** Shows {@code figure} of the long mode beside the judged figure. */
    Target withCompanion(String other) {
        return new Target(id, scenario, text, figure, ratio, atMost, limit, unit, other);
    }

    String comparison() {
        return (atMost ? "≤ " : "≥ ") + Num.text(limit) + " " + unit;
    }
}
