package io.pgdurable.longpoll;

/** What woke a parked fetch, for the wake counters of {@link LongPollSignals#waiterWoken(QueueKind, WakeSource)}. */
public enum WakeSource {
    /** A write of this process, told to its own waiters without the round trip through the database. */
    ANNOUNCEMENT("announcement"),
    /** A NOTIFY from another process (or from a plain-SQL writer through the schema's triggers). */
    NOTIFICATION("notification"),
    /** A tracked future time came due: a delayed item became visible, or a lease end went unverified. */
    DEADLINE("deadline"),
    /** A timer scan's answer (after every (re)LISTEN, periodically, after deadline overflow). */
    SCAN("scan"),
    /** The one-second fallback probe, or the probe that verifies due lease ends. */
    PROBE("probe"),
    /** A wake another fetch passed on: it could not use it, or it ended before using it. */
    HANDOFF("handoff"),
    /**
     * A write of this process leased its item to the parked fetch in the write's own transaction and handed it over:
     * the fetch returned it without a claim.
     */
    HANDOVER("handover");

    private final String label;

    WakeSource(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
