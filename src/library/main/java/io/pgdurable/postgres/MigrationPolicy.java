package io.pgdurable.postgres;

/** What a provider does to its schema at start. */
public enum MigrationPolicy {
    /** Create the schema if needed and apply pending migrations (under a per-schema advisory lock). */
    APPLY_ALL,
    /** Run no DDL at all; refuse to start unless the schema is exactly at this library's version. */
    VERIFY_ONLY
}
