package io.pgdurable.bench;

/**
 * One measured figure of one mode.
 *
 * @param value the figure (NaN when it could not be measured)
 * @param unit  what it counts, e.g. {@code statements/s}, {@code items/s}, {@code ms}
 * @param label what it is, in words, for the report
 */
record Metric(double value, String unit, String label) {}
