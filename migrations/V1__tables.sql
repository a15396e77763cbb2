-- pgdurable storage: history, the two queues and their leases, sessions, key-value state.
-- Every time is BIGINT epoch milliseconds from the application clock (one clock for leases, visibility and timers;
-- no to_timestamp per row). ${schema} is the task hub's schema, validated and quoted by the provider.

CREATE TABLE ${schema}.instances (
    instance_id           TEXT PRIMARY KEY,
    orchestration_name    TEXT   NOT NULL,
    orchestration_version TEXT,
    current_execution_id  BIGINT NOT NULL DEFAULT 1,
    parent_instance_id    TEXT,
    custom_status         TEXT,
    custom_status_version BIGINT NOT NULL DEFAULT 0,
    created_at_ms         BIGINT NOT NULL,
    updated_at_ms         BIGINT NOT NULL
);
-- listChildren and the orphan check of deletion walk parent -> children.
CREATE INDEX instances_parent_idx ON ${schema}.instances (parent_instance_id) WHERE parent_instance_id IS NOT NULL;
-- listInstances is newest first.
CREATE INDEX instances_created_idx ON ${schema}.instances (created_at_ms DESC, instance_id);

CREATE TABLE ${schema}.executions (
    instance_id     TEXT   NOT NULL,
    execution_id    BIGINT NOT NULL,
    status          TEXT   NOT NULL DEFAULT 'Running',
    output          TEXT,
    started_at_ms   BIGINT NOT NULL,
    completed_at_ms BIGINT,
    -- The runtime version this execution is pinned to, packed as major*1e6 + minor*1e3 + patch (NULL = unpinned).
    pinned_version  BIGINT,
    PRIMARY KEY (instance_id, execution_id)
);

-- Append-only. event_data is the runtime's JSON text, byte for byte; event_type is informational.
CREATE TABLE ${schema}.history (
    instance_id   TEXT   NOT NULL,
    execution_id  BIGINT NOT NULL,
    event_id      BIGINT NOT NULL,
    event_type    TEXT   NOT NULL,
    event_data    TEXT   NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (instance_id, execution_id, event_id)
);

-- Messages that drive orchestration turns. A timer is a row whose visible_at_ms is its fire time.
-- lock_token tags the rows that belong to a fetched batch, so messages arriving during a turn survive its ack.
CREATE TABLE ${schema}.orchestrator_queue (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_id     TEXT   NOT NULL,
    kind            TEXT   NOT NULL,
    work_item       TEXT   NOT NULL,
    visible_at_ms   BIGINT NOT NULL,
    lock_token      TEXT,
    locked_until_ms BIGINT,
    attempt_count   INT    NOT NULL DEFAULT 0,
    created_at_ms   BIGINT NOT NULL
);
-- Candidate search: oldest visible message first.
CREATE INDEX orchestrator_queue_visible_idx ON ${schema}.orchestrator_queue (visible_at_ms, id);
-- Tagging a batch and deleting an instance's messages.
CREATE INDEX orchestrator_queue_instance_idx ON ${schema}.orchestrator_queue (instance_id, id);
-- Ack, abandon and renew find their batch by token.
CREATE INDEX orchestrator_queue_lock_idx ON ${schema}.orchestrator_queue (lock_token) WHERE lock_token IS NOT NULL;

-- The orchestration lease: one row per locked instance.
CREATE TABLE ${schema}.instance_locks (
    instance_id     TEXT PRIMARY KEY,
    lock_token      TEXT   NOT NULL UNIQUE,
    locked_until_ms BIGINT NOT NULL,
    locked_at_ms    BIGINT NOT NULL
);

-- Activity executions, leased one at a time. Identity columns serve cancellation; session_id and tag routing.
CREATE TABLE ${schema}.worker_queue (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_item       TEXT   NOT NULL,
    visible_at_ms   BIGINT NOT NULL,
    lock_token      TEXT UNIQUE,
    locked_until_ms BIGINT,
    attempt_count   INT    NOT NULL DEFAULT 0,
    created_at_ms   BIGINT NOT NULL,
    instance_id     TEXT   NOT NULL,
    execution_id    BIGINT NOT NULL,
    activity_id     BIGINT NOT NULL,
    session_id      TEXT,
    tag             TEXT
);
CREATE INDEX worker_queue_activity_idx ON ${schema}.worker_queue (instance_id, execution_id, activity_id);
CREATE INDEX worker_queue_session_idx ON ${schema}.worker_queue (session_id) WHERE session_id IS NOT NULL;

-- Session leases (activity affinity to one owner).
CREATE TABLE ${schema}.sessions (
    session_id          TEXT PRIMARY KEY,
    worker_id           TEXT   NOT NULL,
    locked_until_ms     BIGINT NOT NULL,
    last_activity_at_ms BIGINT NOT NULL
);
CREATE INDEX sessions_worker_idx ON ${schema}.sessions (worker_id);

-- Key-value state: kv_store holds values committed by ended executions (the fetch snapshot); kv_delta the
-- current execution's writes (NULL value = tombstone), merged into kv_store when the execution ends.
CREATE TABLE ${schema}.kv_store (
    instance_id        TEXT   NOT NULL,
    key                TEXT   NOT NULL,
    value              TEXT   NOT NULL,
    execution_id       BIGINT NOT NULL,
    last_updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (instance_id, key)
);

CREATE TABLE ${schema}.kv_delta (
    instance_id        TEXT   NOT NULL,
    key                TEXT   NOT NULL,
    value              TEXT,
    last_updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (instance_id, key)
);
