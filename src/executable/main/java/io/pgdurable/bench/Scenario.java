package io.pgdurable.bench;

/** One benchmark scenario: runs short polling and long polling on the same database and reports both. */
interface Scenario {
    /** The scenario's key in the JSON and on the command line ({@code idle}, {@code wake}, ...). */
    String name();

    /** A heading for the report. */
    String title();

    ScenarioResult run(BenchContext ctx) throws Exception;
}
