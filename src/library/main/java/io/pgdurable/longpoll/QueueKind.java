package io.pgdurable.longpoll;

/** The two queues a fetch can wait on. */
public enum QueueKind {
    ORCHESTRATOR("orchestrator"),
    WORKER("worker");

    private final String label;

    QueueKind(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
