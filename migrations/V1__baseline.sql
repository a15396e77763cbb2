-- pgdurable's schema: one per task hub, created whole by this baseline.
--
-- Released migrations are frozen. Flyway records each applied migration's checksum and refuses a schema whose
-- migrations no longer match their files, so this file never changes once released: every change to the schema is a
-- new migration after it.
--
-- Placeholders, filled by SchemaMigrator:
--   ${schema}       the schema, validated and double-quoted: every object is schema-qualified, so no function body
--                   depends on the caller's search_path
--   ${schema_name}  the bare schema name, where the catalog is searched by name
--   ${channel}      the task hub's NOTIFY channel (long polling)
--
-- Conventions:
--   * Every time is BIGINT epoch milliseconds from the application clock (p_now): one clock for leases, visibility
--     and timers, compared without to_timestamp per row.
--   * The hot path is one function call per provider operation: one round trip, one transaction.
--   * Errors the provider must classify carry SQLSTATEs of class PD (all permanent):
--       PD001 lock token unknown, expired or already used     PD002 invalid input
--       PD003 instance not found                             PD004 instance still running
--   * There are no foreign keys: delete_instances_atomic removes an instance and everything it owns in one
--     transaction, and the queues accept messages for instances that do not exist yet (an event can arrive before
--     its instance starts).
--
-- Sections: tables; indexes; the orchestrator queue; the worker queue; hand-over to parked fetches; history, custom
-- status and key-value reads; management; activation and the provider's write marks; long-poll scans; notify
-- triggers; the SQL API.


-- ======== tables ===================================================================================================

-- One row per orchestration instance. current_execution_id follows continue-as-new; custom_status_version counts
-- custom status changes, so a reader asks only for a status newer than the one it has.
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

-- One row per execution of an instance (continue-as-new starts the next one).
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

-- Append-only. event_data is the runtime's JSON text, byte for byte; event_type is informational. The primary key
-- orders history reads and makes an ack that repeats an event id fail.
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

-- The orchestration lease: one row per locked instance, taken over only once it has ended. The unique token finds
-- the lease for ack, abandon and renewal.
CREATE TABLE ${schema}.instance_locks (
    instance_id     TEXT PRIMARY KEY,
    lock_token      TEXT   NOT NULL UNIQUE,
    locked_until_ms BIGINT NOT NULL,
    locked_at_ms    BIGINT NOT NULL
);

-- Activity executions, leased one at a time. The identity columns serve cancellation; session_id and tag serve
-- routing. A lease's token is either the provider's own (single claims, hand-overs) or one that names its row,
-- '@<row id>:<random part>' (batched claims; see worker_token_row).
CREATE TABLE ${schema}.worker_queue (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_item       TEXT   NOT NULL,
    visible_at_ms   BIGINT NOT NULL,
    lock_token      TEXT,
    locked_until_ms BIGINT,
    attempt_count   INT    NOT NULL DEFAULT 0,
    created_at_ms   BIGINT NOT NULL,
    instance_id     TEXT   NOT NULL,
    execution_id    BIGINT NOT NULL,
    activity_id     BIGINT NOT NULL,
    session_id      TEXT,
    tag             TEXT
);

-- Session leases: a session's activities go to one owner at a time.
CREATE TABLE ${schema}.sessions (
    session_id          TEXT PRIMARY KEY,
    worker_id           TEXT   NOT NULL,
    locked_until_ms     BIGINT NOT NULL,
    last_activity_at_ms BIGINT NOT NULL
);

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

-- Settings that providers and the SQL API read at run time, so an operator changes them without a migration:
-- 'long_polling' (the activation, 'on' or 'off') and 'sql_api_max_payload_bytes' (the SQL API's payload limit).
CREATE TABLE ${schema}.hub_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Each long-polling process's parked fetches for untagged items without a session, for hand-over across processes
-- (enqueue_worker_item_offered). A row is the parked process's own account, written as an absolute count when it
-- changes; an enqueue that hands an item over takes one off. A count that is too high costs a release (the process
-- finds no fetch left for the item and gives it back at once, the attempt not counted); too low, the item is
-- announced and claimed as usual. Whether the process still lives is the advisory lock its listener's session holds
-- on liveness_key.
CREATE TABLE ${schema}.parked_fetches (
    origin        TEXT PRIMARY KEY,
    liveness_key  BIGINT NOT NULL,
    waiting       INT NOT NULL CHECK (waiting >= 0),
    lock_ms       BIGINT NOT NULL CHECK (lock_ms > 0),
    updated_at_ms BIGINT NOT NULL
);


-- ======== indexes ==================================================================================================

-- listChildren and the orphan check of deletion walk parent -> children.
CREATE INDEX instances_parent_idx ON ${schema}.instances (parent_instance_id) WHERE parent_instance_id IS NOT NULL;
-- listInstances is newest first.
CREATE INDEX instances_created_idx ON ${schema}.instances (created_at_ms DESC, instance_id);

-- The orchestrator fetch's candidate search: oldest visible message first.
CREATE INDEX orchestrator_queue_visible_idx ON ${schema}.orchestrator_queue (visible_at_ms, id);
-- Tagging an instance's batch, and deleting an instance's messages.
CREATE INDEX orchestrator_queue_instance_idx ON ${schema}.orchestrator_queue (instance_id, id);
-- Ack, abandon and renew find their batch by token.
CREATE INDEX orchestrator_queue_lock_idx ON ${schema}.orchestrator_queue (lock_token) WHERE lock_token IS NOT NULL;

-- Lease ends, for the timer scan (next_deadlines).
CREATE INDEX instance_locks_until_idx ON ${schema}.instance_locks (locked_until_ms);

-- Cancellation by activity identity, and deletion by instance.
CREATE INDEX worker_queue_activity_idx ON ${schema}.worker_queue (instance_id, execution_id, activity_id);
-- The session orphan check.
CREATE INDEX worker_queue_session_idx ON ${schema}.worker_queue (session_id) WHERE session_id IS NOT NULL;
-- Lease ends and delayed visibility: the timer scan, and a claim's test for an expired lease.
CREATE INDEX worker_queue_leased_until_idx ON ${schema}.worker_queue (locked_until_ms) WHERE lock_token IS NOT NULL;
CREATE INDEX worker_queue_visible_idx ON ${schema}.worker_queue (visible_at_ms) WHERE lock_token IS NULL;

-- Worker claims: the unleased rows in id order. A row enters it when enqueued or released and leaves it when
-- claimed, so it holds one entry per row version that was ever claimable and none for a leased one: a claim walks
-- neither over leased rows (long-running activities at the head of the queue) nor over the entries a claim and an
-- ack leave behind until VACUUM (a claim is a non-HOT update).
CREATE INDEX worker_queue_unleased_idx ON ${schema}.worker_queue (id) WHERE lock_token IS NULL;
-- Ack, renew and release of the tokens that do not name their row (single claims, hand-overs). Row-naming tokens
-- are found by the primary key and left out, so a batched claim adds no entry here (one of four per claimed row),
-- and neither do the NULL tokens of unleased rows. Row-naming tokens are unique through their row id. Created last
-- on purpose: of two indexes the planner costs alike it takes the newer, and on a queue with few leases the lease-end
-- index costs the same as this one for a token lookup that also tests the lease, while reading every live lease.
CREATE UNIQUE INDEX worker_queue_lock_token_idx ON ${schema}.worker_queue (lock_token) WHERE lock_token NOT LIKE '@%';

-- Session renewal by owner, and session lease ends for the timer scan.
CREATE INDEX sessions_worker_idx ON ${schema}.sessions (worker_id);
CREATE INDEX sessions_until_idx ON ${schema}.sessions (locked_until_ms);


-- ======== orchestrator queue =======================================================================================

-- Claims p_instance for p_token if it can be claimed: not locked, not held by another claimer (advisory lock),
-- startable, its pinned version within [p_min_version, p_max_version] when given, with messages visible by
-- p_visible_by. No row: not claimed, and nothing changed, except that with p_drop_orphans the persistent events of a
-- never-started instance that nothing can start are dropped. The orchestrator fetch calls it for each candidate and
-- the hand-over's claiming writes for the instance they wrote to, so a handed-over batch is exactly what a fetch
-- would have claimed.
--
-- Only visibility is judged by p_visible_by; leases are judged by p_now, the claim's own clock. A fetch woken ahead
-- of a visibility time claims at once what will be visible by then (and returns it no earlier), yet never takes a
-- lease before it ended, and the lease it takes starts at p_now. With p_visible_by = p_now it claims what is visible
-- now.
--
-- Generic plans, planned once per session: planning afresh with the call's values costs more than the statements
-- run. A generic plan does not know that visible_at_ms <= p_visible_by matches nearly every row of one instance and
-- may combine the instance index with the visible-at index (a BitmapAnd that reads the whole visible-at index of a
-- deep queue), so the per-instance statements compare visible_at_ms + 0, which no index serves.
--
-- The history is read by a statement that starts after the instance lock is held: one statement from lock to
-- history would read under a snapshot taken before an ack that commits while the lock upsert waits on its row.
CREATE FUNCTION ${schema}.claim_orchestration_instance(
    p_instance TEXT, p_now BIGINT, p_visible_by BIGINT, p_lock_ms BIGINT, p_token TEXT, p_min_version BIGINT,
    p_max_version BIGINT, p_drop_orphans BOOLEAN)
RETURNS TABLE (
    instance_id TEXT, orchestration_name TEXT, orchestration_version TEXT, execution_id BIGINT,
    has_instance BOOLEAN, attempt_count INT, messages TEXT[], event_ids BIGINT[], event_types TEXT[],
    event_data TEXT[], kv_keys TEXT[], kv_values TEXT[], kv_updated_ms BIGINT[])
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_name     TEXT;
    v_version  TEXT;
    v_exec     BIGINT;
    v_has_inst BOOLEAN;
    v_dropped  INT;
    v_attempts INT;
    v_messages TEXT[];
BEGIN
    -- Another claimer is working on this instance right now: the caller moves on instead of queueing behind it.
    IF NOT pg_try_advisory_xact_lock(hashtext('${schema}'), hashtext(p_instance)) THEN
        RETURN;
    END IF;

    SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id
      INTO v_name, v_version, v_exec
      FROM ${schema}.instances i WHERE i.instance_id = p_instance;
    v_has_inst := FOUND;

    IF p_min_version IS NOT NULL AND v_has_inst AND NOT COALESCE(
            (SELECT e.pinned_version FROM ${schema}.executions e
              WHERE e.instance_id = p_instance AND e.execution_id = v_exec),
            p_min_version) BETWEEN p_min_version AND p_max_version THEN
        RETURN;
    END IF;

    IF NOT v_has_inst
       AND NOT EXISTS (SELECT 1 FROM ${schema}.history h WHERE h.instance_id = p_instance)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.orchestrator_queue q
                        WHERE q.instance_id = p_instance AND q.visible_at_ms + 0 <= p_visible_by
                          AND q.kind IN ('StartOrchestration', 'ContinueAsNew')) THEN
        -- Nothing can start this instance yet. Persistent events sent before it exists would loop forever: drop
        -- them. Anything else (a cancel racing a start) waits for its start message.
        IF p_drop_orphans AND NOT EXISTS (SELECT 1 FROM ${schema}.orchestrator_queue q
                                           WHERE q.instance_id = p_instance AND q.kind <> 'QueueMessage') THEN
            DELETE FROM ${schema}.orchestrator_queue q
             WHERE q.instance_id = p_instance AND q.visible_at_ms + 0 <= p_visible_by;
            GET DIAGNOSTICS v_dropped = ROW_COUNT;
            IF v_dropped > 0 THEN
                RAISE WARNING 'pgdurable: dropped % orphan QueueMessage(s) for never-started instance %',
                    v_dropped, p_instance;
            END IF;
        END IF;
        RETURN;
    END IF;

    INSERT INTO ${schema}.instance_locks AS l (instance_id, lock_token, locked_until_ms, locked_at_ms)
    VALUES (p_instance, p_token, p_now + p_lock_ms, p_now)
    ON CONFLICT ON CONSTRAINT instance_locks_pkey DO UPDATE
       SET lock_token = EXCLUDED.lock_token, locked_until_ms = EXCLUDED.locked_until_ms,
           locked_at_ms = EXCLUDED.locked_at_ms
     WHERE l.locked_until_ms <= p_now;
    IF NOT FOUND THEN
        RETURN;
    END IF;

    WITH tagged AS (
        UPDATE ${schema}.orchestrator_queue q
           SET lock_token = p_token, locked_until_ms = p_now + p_lock_ms, attempt_count = q.attempt_count + 1
         WHERE q.instance_id = p_instance AND q.visible_at_ms + 0 <= p_visible_by
           AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)
        RETURNING q.id, q.work_item, q.attempt_count)
    SELECT array_agg(t.work_item ORDER BY t.id), max(t.attempt_count) INTO v_messages, v_attempts FROM tagged t;

    IF v_messages IS NULL THEN
        -- The messages were consumed between the caller's look and the lock.
        DELETE FROM ${schema}.instance_locks l WHERE l.instance_id = p_instance AND l.lock_token = p_token;
        RETURN;
    END IF;

    instance_id := p_instance;
    orchestration_name := v_name;
    orchestration_version := v_version;
    execution_id := COALESCE(v_exec, 1);
    has_instance := v_has_inst;
    attempt_count := v_attempts;
    messages := v_messages;
    SELECT array_agg(h.event_id ORDER BY h.event_id), array_agg(h.event_type ORDER BY h.event_id),
           array_agg(h.event_data ORDER BY h.event_id)
      INTO event_ids, event_types, event_data
      FROM ${schema}.history h
     WHERE h.instance_id = p_instance AND h.execution_id = COALESCE(v_exec, 1);
    SELECT array_agg(k.key ORDER BY k.key), array_agg(k.value ORDER BY k.key),
           array_agg(k.last_updated_at_ms ORDER BY k.key)
      INTO kv_keys, kv_values, kv_updated_ms
      FROM ${schema}.kv_store k WHERE k.instance_id = p_instance;
    RETURN NEXT;
END
$$;

-- Locks one instance with visible messages, tags them, and returns them with the instance's current history and
-- key-value snapshot. The candidate search, oldest visible message first, is served by the visible-at index
-- whatever the values (so a generic plan is right); each candidate is claimed or passed over by
-- claim_orchestration_instance, after the search has applied the version filter. Losing a race for a candidate
-- moves on to the next one: the result is empty only when nothing is eligible. p_visible_by: see
-- claim_orchestration_instance (the provider passes p_now except for a fetch woken ahead of a timer).
CREATE FUNCTION ${schema}.fetch_orchestration_item(
    p_now BIGINT, p_visible_by BIGINT, p_lock_ms BIGINT, p_token TEXT, p_min_version BIGINT,
    p_max_version BIGINT)
RETURNS TABLE (
    instance_id TEXT, orchestration_name TEXT, orchestration_version TEXT, execution_id BIGINT,
    has_instance BOOLEAN, attempt_count INT, messages TEXT[], event_ids BIGINT[], event_types TEXT[],
    event_data TEXT[], kv_keys TEXT[], kv_values TEXT[], kv_updated_ms BIGINT[])
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_instance TEXT;
    v_skipped  TEXT[] := '{}';
    v_claimed  BOOLEAN;
BEGIN
    FOR v_round IN 1..64 LOOP
        SELECT q.instance_id INTO v_instance
          FROM ${schema}.orchestrator_queue q
         WHERE q.visible_at_ms <= p_visible_by
           AND q.instance_id <> ALL (v_skipped)
           AND NOT EXISTS (SELECT 1 FROM ${schema}.instance_locks l
                            WHERE l.instance_id = q.instance_id AND l.locked_until_ms > p_now)
           -- A correlated scalar lookup per candidate (two primary-key probes), never a scan of all executions.
           AND (p_min_version IS NULL OR COALESCE(
                    (SELECT e.pinned_version FROM ${schema}.instances i
                       JOIN ${schema}.executions e
                         ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
                      WHERE i.instance_id = q.instance_id),
                    p_min_version) BETWEEN p_min_version AND p_max_version)
         ORDER BY q.visible_at_ms, q.id
         LIMIT 1;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_skipped := v_skipped || v_instance;

        v_claimed := FALSE;
        FOR instance_id, orchestration_name, orchestration_version, execution_id, has_instance, attempt_count,
            messages, event_ids, event_types, event_data, kv_keys, kv_values, kv_updated_ms IN
            SELECT * FROM ${schema}.claim_orchestration_instance(v_instance, p_now, p_visible_by, p_lock_ms, p_token,
                                                                 NULL, NULL, TRUE)
        LOOP
            v_claimed := TRUE;
            RETURN NEXT;
        END LOOP;
        IF v_claimed THEN
            RETURN;
        END IF;
    END LOOP;
END
$$;

-- Commits one turn. The arrays are parallel columns of the history delta, the new worker and orchestrator items,
-- the key-value mutations and the activities to cancel.
CREATE FUNCTION ${schema}.ack_orchestration_item(
    p_token TEXT, p_now BIGINT, p_execution_id BIGINT,
    p_event_ids BIGINT[], p_event_types TEXT[], p_event_data TEXT[],
    p_worker_items TEXT[], p_worker_instances TEXT[], p_worker_executions BIGINT[], p_worker_activities BIGINT[],
    p_worker_sessions TEXT[], p_worker_tags TEXT[],
    p_orch_instances TEXT[], p_orch_kinds TEXT[], p_orch_items TEXT[], p_orch_visible_at BIGINT[],
    p_status TEXT, p_output TEXT, p_name TEXT, p_version TEXT, p_parent TEXT, p_pinned_version BIGINT,
    p_custom_status_action INT, p_custom_status TEXT,
    p_kv_ops TEXT[], p_kv_keys TEXT[], p_kv_values TEXT[], p_kv_updated_ms BIGINT[],
    p_cancel_instances TEXT[], p_cancel_executions BIGINT[], p_cancel_activities BIGINT[])
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_instance TEXT;
    v_expired  BIGINT;
BEGIN
    -- FOR UPDATE: of two acks racing on one token, the second waits and then finds the lock gone.
    SELECT l.instance_id INTO v_instance FROM ${schema}.instance_locks l
     WHERE l.lock_token = p_token AND l.locked_until_ms > p_now FOR UPDATE;
    IF NOT FOUND THEN
        SELECT l.locked_until_ms INTO v_expired FROM ${schema}.instance_locks l WHERE l.lock_token = p_token;
        IF FOUND THEN
            RAISE EXCEPTION 'Invalid lock token: the lock expired % ms ago', p_now - v_expired USING ERRCODE = 'PD001';
        END IF;
        RAISE EXCEPTION 'Invalid lock token: unknown or already used' USING ERRCODE = 'PD001';
    END IF;

    IF p_name IS NOT NULL AND p_version IS NOT NULL THEN
        INSERT INTO ${schema}.instances AS i (instance_id, orchestration_name, orchestration_version,
               current_execution_id, parent_instance_id, created_at_ms, updated_at_ms)
        VALUES (v_instance, p_name, p_version, p_execution_id, p_parent, p_now, p_now)
        ON CONFLICT (instance_id) DO UPDATE
           SET orchestration_name = EXCLUDED.orchestration_name,
               orchestration_version = EXCLUDED.orchestration_version,
               parent_instance_id = COALESCE(i.parent_instance_id, EXCLUDED.parent_instance_id),
               updated_at_ms = p_now;
    END IF;

    INSERT INTO ${schema}.executions (instance_id, execution_id, status, started_at_ms)
    VALUES (v_instance, p_execution_id, 'Running', p_now)
    ON CONFLICT DO NOTHING;

    UPDATE ${schema}.instances i
       SET current_execution_id = GREATEST(i.current_execution_id, p_execution_id), updated_at_ms = p_now
     WHERE i.instance_id = v_instance;

    INSERT INTO ${schema}.history (instance_id, execution_id, event_id, event_type, event_data, created_at_ms)
    SELECT v_instance, p_execution_id, e.id, e.type, e.data, p_now
      FROM unnest(p_event_ids, p_event_types, p_event_data) AS e(id, type, data);

    IF p_status IS NOT NULL OR p_pinned_version IS NOT NULL THEN
        UPDATE ${schema}.executions e
           SET status = COALESCE(p_status, e.status),
               output = CASE WHEN p_status IS NULL THEN e.output ELSE p_output END,
               completed_at_ms = CASE WHEN p_status IN ('Completed', 'Failed', 'ContinuedAsNew') THEN p_now
                                      WHEN p_status IS NULL THEN e.completed_at_ms END,
               pinned_version = COALESCE(p_pinned_version, e.pinned_version)
         WHERE e.instance_id = v_instance AND e.execution_id = p_execution_id;
    END IF;

    IF p_custom_status_action <> 0 THEN
        UPDATE ${schema}.instances i
           SET custom_status = CASE WHEN p_custom_status_action = 1 THEN p_custom_status END,
               custom_status_version = i.custom_status_version + 1
         WHERE i.instance_id = v_instance;
    END IF;

    IF cardinality(p_kv_ops) > 0 THEN
        PERFORM ${schema}.apply_kv_mutations(v_instance, p_now, p_kv_ops, p_kv_keys, p_kv_values, p_kv_updated_ms);
    END IF;
    IF p_status IN ('Completed', 'Failed', 'ContinuedAsNew') THEN
        PERFORM ${schema}.merge_kv_delta(v_instance, p_execution_id);
    END IF;

    INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                        activity_id, session_id, tag)
    SELECT w.item, p_now, p_now, w.inst, w.exec, w.act, w.sess, w.tag
      FROM unnest(p_worker_items, p_worker_instances, p_worker_executions, p_worker_activities,
                  p_worker_sessions, p_worker_tags) WITH ORDINALITY AS w(item, inst, exec, act, sess, tag, n)
     ORDER BY w.n;

    -- After the inserts above, so an activity both scheduled and cancelled in one turn ends up absent.
    DELETE FROM ${schema}.worker_queue w
     USING unnest(p_cancel_instances, p_cancel_executions, p_cancel_activities) AS c(inst, exec, act)
     WHERE w.instance_id = c.inst AND w.execution_id = c.exec AND w.activity_id = c.act;

    INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
    SELECT o.inst, o.kind, o.item, o.visible_at, p_now
      FROM unnest(p_orch_instances, p_orch_kinds, p_orch_items, p_orch_visible_at)
           WITH ORDINALITY AS o(inst, kind, item, visible_at, n)
     ORDER BY o.n;

    DELETE FROM ${schema}.orchestrator_queue q WHERE q.lock_token = p_token;
    DELETE FROM ${schema}.instance_locks l WHERE l.lock_token = p_token;
END
$$;

-- The key-value mutations of one turn, in delta order, into the current execution's delta table.
CREATE FUNCTION ${schema}.apply_kv_mutations(
    p_instance TEXT, p_now BIGINT, p_ops TEXT[], p_keys TEXT[], p_values TEXT[], p_updated_ms BIGINT[])
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..cardinality(p_ops) LOOP
        IF p_ops[i] = 'set' THEN
            INSERT INTO ${schema}.kv_delta AS d (instance_id, key, value, last_updated_at_ms)
            VALUES (p_instance, p_keys[i], p_values[i], p_updated_ms[i])
            ON CONFLICT (instance_id, key) DO UPDATE
               SET value = EXCLUDED.value, last_updated_at_ms = EXCLUDED.last_updated_at_ms;
        ELSIF p_ops[i] = 'clear' THEN
            INSERT INTO ${schema}.kv_delta AS d (instance_id, key, value, last_updated_at_ms)
            VALUES (p_instance, p_keys[i], NULL, p_now)
            ON CONFLICT (instance_id, key) DO UPDATE SET value = NULL, last_updated_at_ms = p_now;
        ELSIF p_ops[i] = 'clear_all' THEN
            UPDATE ${schema}.kv_delta d SET value = NULL, last_updated_at_ms = p_now
             WHERE d.instance_id = p_instance;
            INSERT INTO ${schema}.kv_delta (instance_id, key, value, last_updated_at_ms)
            SELECT s.instance_id, s.key, NULL, p_now FROM ${schema}.kv_store s WHERE s.instance_id = p_instance
            ON CONFLICT (instance_id, key) DO NOTHING;
        ELSE
            RAISE EXCEPTION 'unknown key-value operation %', p_ops[i] USING ERRCODE = 'PD002';
        END IF;
    END LOOP;
END
$$;

-- The execution ended: its delta becomes the committed store.
CREATE FUNCTION ${schema}.merge_kv_delta(p_instance TEXT, p_execution_id BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ${schema}.kv_store AS s (instance_id, key, value, execution_id, last_updated_at_ms)
    SELECT d.instance_id, d.key, d.value, p_execution_id, d.last_updated_at_ms
      FROM ${schema}.kv_delta d WHERE d.instance_id = p_instance AND d.value IS NOT NULL
    ON CONFLICT (instance_id, key) DO UPDATE
       SET value = EXCLUDED.value, execution_id = EXCLUDED.execution_id,
           last_updated_at_ms = EXCLUDED.last_updated_at_ms;
    DELETE FROM ${schema}.kv_store s
     USING ${schema}.kv_delta d
     WHERE d.instance_id = p_instance AND d.value IS NULL AND s.instance_id = d.instance_id AND s.key = d.key;
    DELETE FROM ${schema}.kv_delta d WHERE d.instance_id = p_instance;
END
$$;

-- ack_orchestration_item, plus what only the database knows once the lock is released: the earliest visibility time
-- of the instance's messages that arrived during the turn (NULL when none did), so the acking provider can announce
-- that the instance is claimable again.
CREATE FUNCTION ${schema}.ack_orchestration_turn(
    p_token TEXT, p_now BIGINT, p_execution_id BIGINT,
    p_event_ids BIGINT[], p_event_types TEXT[], p_event_data TEXT[],
    p_worker_items TEXT[], p_worker_instances TEXT[], p_worker_executions BIGINT[], p_worker_activities BIGINT[],
    p_worker_sessions TEXT[], p_worker_tags TEXT[],
    p_orch_instances TEXT[], p_orch_kinds TEXT[], p_orch_items TEXT[], p_orch_visible_at BIGINT[],
    p_status TEXT, p_output TEXT, p_name TEXT, p_version TEXT, p_parent TEXT, p_pinned_version BIGINT,
    p_custom_status_action INT, p_custom_status TEXT,
    p_kv_ops TEXT[], p_kv_keys TEXT[], p_kv_values TEXT[], p_kv_updated_ms BIGINT[],
    p_cancel_instances TEXT[], p_cancel_executions BIGINT[], p_cancel_activities BIGINT[])
RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_instance TEXT;
    v_next     BIGINT;
BEGIN
    SELECT l.instance_id INTO v_instance FROM ${schema}.instance_locks l WHERE l.lock_token = p_token;
    PERFORM ${schema}.ack_orchestration_item(
        p_token, p_now, p_execution_id, p_event_ids, p_event_types, p_event_data,
        p_worker_items, p_worker_instances, p_worker_executions, p_worker_activities, p_worker_sessions, p_worker_tags,
        p_orch_instances, p_orch_kinds, p_orch_items, p_orch_visible_at,
        p_status, p_output, p_name, p_version, p_parent, p_pinned_version, p_custom_status_action, p_custom_status,
        p_kv_ops, p_kv_keys, p_kv_values, p_kv_updated_ms, p_cancel_instances, p_cancel_executions,
        p_cancel_activities);
    SELECT min(q.visible_at_ms) INTO v_next
      FROM ${schema}.orchestrator_queue q
     WHERE q.instance_id = v_instance AND q.lock_token IS NULL;
    RETURN v_next;
END
$$;

CREATE FUNCTION ${schema}.abandon_orchestration_item(
    p_token TEXT, p_now BIGINT, p_delay_ms BIGINT, p_ignore_attempt BOOLEAN)
RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_instance TEXT;
BEGIN
    DELETE FROM ${schema}.instance_locks l WHERE l.lock_token = p_token RETURNING l.instance_id INTO v_instance;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: unknown or already used' USING ERRCODE = 'PD001';
    END IF;
    UPDATE ${schema}.orchestrator_queue q
       SET lock_token = NULL, locked_until_ms = NULL,
           visible_at_ms = CASE WHEN p_delay_ms > 0 THEN p_now + p_delay_ms ELSE q.visible_at_ms END,
           attempt_count = CASE WHEN p_ignore_attempt THEN GREATEST(0, q.attempt_count - 1) ELSE q.attempt_count END
     WHERE q.lock_token = p_token;
    RETURN v_instance;
END
$$;

CREATE FUNCTION ${schema}.renew_orchestration_item_lock(p_token TEXT, p_now BIGINT, p_extend_ms BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ${schema}.instance_locks l SET locked_until_ms = p_now + p_extend_ms
     WHERE l.lock_token = p_token AND l.locked_until_ms > p_now;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: unknown, expired or already used' USING ERRCODE = 'PD001';
    END IF;
    UPDATE ${schema}.orchestrator_queue q SET locked_until_ms = p_now + p_extend_ms WHERE q.lock_token = p_token;
END
$$;

CREATE FUNCTION ${schema}.enqueue_orchestrator_item(
    p_instance TEXT, p_kind TEXT, p_item TEXT, p_visible_at BIGINT, p_now BIGINT)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
    VALUES (p_instance, p_kind, p_item, p_visible_at, p_now);
$$;

-- Enqueues many orchestrator messages in list order, each visible at its own time, in one statement (so a notify
-- trigger fires once for all of them). Returns how many were stored.
CREATE FUNCTION ${schema}.enqueue_orchestrator_items(
    p_instances TEXT[], p_kinds TEXT[], p_items TEXT[], p_visible_at BIGINT[], p_now BIGINT)
RETURNS INT
LANGUAGE sql AS $$
    WITH stored AS (
        INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
        SELECT r.instance_id, r.kind, r.item, r.visible_at, p_now
          FROM unnest(p_instances, p_kinds, p_items, p_visible_at) WITH ORDINALITY
               AS r(instance_id, kind, item, visible_at, n)
         ORDER BY r.n
        RETURNING 1)
    SELECT count(*)::INT FROM stored;
$$;


-- ======== worker queue =============================================================================================

-- The row id a row-naming token names ('@', 1 to 18 ASCII digits, ':'); NULL for any other text (a token of another
-- form, or a malformed one). Plain string functions, not a regular expression: they cost a third as much per token,
-- and a batched ack parses a hundred.
--
-- Where a row is found by the id, its token is compared with IS NOT DISTINCT FROM (the same test for the non-NULL
-- tokens these functions get): an equality would tell the planner that lock_token is set, which lets it read the
-- lease-end index (partial on lock_token IS NOT NULL) from end to end instead of probing the primary key, and it
-- chooses that for a queue with few leases.
CREATE FUNCTION ${schema}.worker_token_row(p_token TEXT)
RETURNS BIGINT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- A CASE, not AND: each test guards the next (a negative substring length and a cast of anything but digits
    -- raise errors), and CASE keeps their order.
    SELECT CASE WHEN left(p_token, 1) <> '@' THEN NULL
                WHEN strpos(p_token, ':') NOT BETWEEN 3 AND 20 THEN NULL
                WHEN ltrim(substring(p_token FROM 2 FOR strpos(p_token, ':') - 2), '0123456789') <> '' THEN NULL
                ELSE substring(p_token FROM 2 FOR strpos(p_token, ':') - 2)::BIGINT END
$$;

-- The worker row that may hold a token: named by it, or found through the partial token index; NULL when none can.
-- The caller still compares the row's lock_token with the token. Used where a token was refused (to say why) and
-- by the rare release; the hot paths look the row up in their own statements, so a token of either kind costs one
-- index probe.
CREATE FUNCTION ${schema}.worker_row_of(p_token TEXT)
RETURNS BIGINT
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(${schema}.worker_token_row(p_token),
                    (SELECT w.id FROM ${schema}.worker_queue w
                      WHERE w.lock_token = p_token AND w.lock_token NOT LIKE '@%'))
$$;

-- Says precisely why a worker token no longer works.
CREATE FUNCTION ${schema}.raise_worker_token_error(p_token TEXT, p_now BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_until BIGINT;
BEGIN
    SELECT w.locked_until_ms INTO v_until FROM ${schema}.worker_queue w
     WHERE w.id = ${schema}.worker_row_of(p_token) AND w.lock_token IS NOT DISTINCT FROM p_token;
    IF FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: the work item lease expired % ms ago', p_now - v_until
            USING ERRCODE = 'PD001';
    END IF;
    RAISE EXCEPTION 'Invalid lock token: worker queue item not found (unknown token, already acked, or cancelled)'
        USING ERRCODE = 'PD001';
END
$$;

CREATE FUNCTION ${schema}.enqueue_worker_item(
    p_item TEXT, p_now BIGINT, p_instance TEXT, p_execution_id BIGINT, p_activity_id BIGINT,
    p_session TEXT, p_tag TEXT)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                        activity_id, session_id, tag)
    VALUES (p_item, p_now, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag);
$$;

-- Enqueues many activities in list order (identity ids follow the list) in one statement. Returns how many were
-- stored.
CREATE FUNCTION ${schema}.enqueue_worker_items(
    p_items TEXT[], p_now BIGINT, p_instances TEXT[], p_executions BIGINT[], p_activities BIGINT[],
    p_sessions TEXT[], p_tags TEXT[])
RETURNS INT
LANGUAGE sql AS $$
    WITH stored AS (
        INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                            activity_id, session_id, tag)
        SELECT r.item, p_now, p_now, r.instance_id, r.execution_id, r.activity_id, r.session_id, r.tag
          FROM unnest(p_items, p_instances, p_executions, p_activities, p_sessions, p_tags) WITH ORDINALITY
               AS r(item, instance_id, execution_id, activity_id, session_id, tag, n)
         ORDER BY r.n
        RETURNING 1)
    SELECT count(*)::INT FROM stored;
$$;

-- Leases one activity. p_tag_mode: 0 untagged only, 1 listed tags, 2 untagged or listed, 3 any. p_owner NULL: only
-- items without a session. Otherwise also items whose session this owner holds or nobody holds (no row or an
-- expired lease); claiming such an item takes or refreshes the session lease.
--
-- Two queries pick the item. While no lease has ended, the claimable rows are exactly the visible unleased ones,
-- found through worker_queue_unleased_idx; once one has (a range scan of the lease-end index tells), the query over
-- the primary key that also takes ended leases. Same rows, same order either way.
--
-- The claims plan without sequential scans, bitmap scans or sorts, and once per session (a generic plan): a queue's
-- statistics are rarely current (a fresh or just drained table), and with stale ones the planner answers the
-- lease-end question with a sequential scan of the queue, and the claim with a scan of every visible row in
-- visible_at order and a sort, each costing more than the whole claim should. The ordered index scans these queries
-- are written for are right at every queue size. JIT is off: a disabled plan node's cost is far above
-- jit_above_cost, so a sort of a few rows would be compiled on every call.
CREATE FUNCTION ${schema}.fetch_work_item(
    p_now BIGINT, p_lock_ms BIGINT, p_token TEXT, p_owner TEXT, p_session_lock_ms BIGINT,
    p_tag_mode INT, p_tags TEXT[])
RETURNS TABLE (work_item TEXT, attempt_count INT)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_id       BIGINT;
    v_session  TEXT;
    v_lost     TEXT[] := '{}';
    -- Has a lease ended by p_now on a row it keeps from the unleased index? (a range scan of the lease-end index;
    -- written here, not in a function of its own, so that its plan is cached with the claim's)
    v_expired  BOOLEAN := EXISTS (SELECT 1 FROM ${schema}.worker_queue w
                                   WHERE w.lock_token IS NOT NULL AND w.locked_until_ms <= p_now
                                     AND w.visible_at_ms <= p_now);
BEGIN
    FOR v_round IN 1..64 LOOP
        IF v_expired THEN
            SELECT q.id, q.session_id INTO v_id, v_session
              FROM ${schema}.worker_queue q
              LEFT JOIN ${schema}.sessions s ON s.session_id = q.session_id AND s.locked_until_ms > p_now
             WHERE q.visible_at_ms <= p_now
               AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)
               AND CASE p_tag_mode WHEN 0 THEN q.tag IS NULL
                                   WHEN 1 THEN q.tag = ANY (p_tags)
                                   WHEN 2 THEN q.tag IS NULL OR q.tag = ANY (p_tags)
                                   ELSE TRUE END
               AND CASE WHEN p_owner IS NULL THEN q.session_id IS NULL
                        ELSE q.session_id IS NULL
                             OR (q.session_id <> ALL (v_lost) AND (s.session_id IS NULL OR s.worker_id = p_owner)) END
             ORDER BY q.id
             LIMIT 1
               FOR UPDATE OF q SKIP LOCKED;
        ELSE
            SELECT q.id, q.session_id INTO v_id, v_session
              FROM ${schema}.worker_queue q
              LEFT JOIN ${schema}.sessions s ON s.session_id = q.session_id AND s.locked_until_ms > p_now
             WHERE q.visible_at_ms <= p_now
               AND q.lock_token IS NULL
               AND CASE p_tag_mode WHEN 0 THEN q.tag IS NULL
                                   WHEN 1 THEN q.tag = ANY (p_tags)
                                   WHEN 2 THEN q.tag IS NULL OR q.tag = ANY (p_tags)
                                   ELSE TRUE END
               AND CASE WHEN p_owner IS NULL THEN q.session_id IS NULL
                        ELSE q.session_id IS NULL
                             OR (q.session_id <> ALL (v_lost) AND (s.session_id IS NULL OR s.worker_id = p_owner)) END
             ORDER BY q.id
             LIMIT 1
               FOR UPDATE OF q SKIP LOCKED;
        END IF;
        IF NOT FOUND THEN
            RETURN;
        END IF;

        IF v_session IS NOT NULL THEN
            -- Claims within one session are serialised, and a claimer that sees an older claimable item of the
            -- session (another fetcher is taking it right now) leaves the session alone: its items go out oldest
            -- first even when owners race for it.
            PERFORM pg_advisory_xact_lock(hashtext('${schema}:session'), hashtext(v_session));
            IF EXISTS (SELECT 1 FROM ${schema}.worker_queue o
                        WHERE o.session_id = v_session AND o.id < v_id AND o.visible_at_ms <= p_now
                          AND (o.lock_token IS NULL OR o.locked_until_ms <= p_now)
                          AND CASE p_tag_mode WHEN 0 THEN o.tag IS NULL
                                              WHEN 1 THEN o.tag = ANY (p_tags)
                                              WHEN 2 THEN o.tag IS NULL OR o.tag = ANY (p_tags)
                                              ELSE TRUE END) THEN
                v_lost := v_lost || v_session;
                CONTINUE;
            END IF;
            INSERT INTO ${schema}.sessions AS s (session_id, worker_id, locked_until_ms, last_activity_at_ms)
            VALUES (v_session, p_owner, p_now + p_session_lock_ms, p_now)
            ON CONFLICT (session_id) DO UPDATE
               SET worker_id = EXCLUDED.worker_id, locked_until_ms = EXCLUDED.locked_until_ms,
                   last_activity_at_ms = EXCLUDED.last_activity_at_ms
             WHERE s.locked_until_ms <= p_now OR s.worker_id = p_owner;
            IF NOT FOUND THEN
                -- Another owner took the session since the search: its items are not ours.
                v_lost := v_lost || v_session;
                CONTINUE;
            END IF;
        END IF;

        RETURN QUERY
        UPDATE ${schema}.worker_queue q
           SET lock_token = p_token, locked_until_ms = p_now + p_lock_ms, attempt_count = q.attempt_count + 1
         WHERE q.id = v_id
        RETURNING q.work_item, q.attempt_count;
        RETURN;
    END LOOP;
END
$$;

-- Leases up to p_max_items activities, oldest first, with the eligibility, tag and session rules, the two queries
-- and the planner settings of fetch_work_item. Each claimed row's token names it: '@<row id>:' || p_token_prefix.
-- The claimed rows are updated by the row versions (ctid) the locking SELECT returned: a row this transaction holds
-- FOR UPDATE keeps its version until the transaction writes it, so a TID scan per row replaces a descent of the
-- primary key; the id is compared too, which keeps the update to the rows the selection chose whatever the locking
-- rules allow.
--
-- The reply is bounded by p_max_bytes, the sum of the returned items' work_item sizes: candidates are kept oldest
-- first and the batch stops at the first that does not fit, except that with p_first_free the very first item is
-- kept even when it alone is larger (so an item bigger than the bound can still be fetched). When the byte bound
-- stopped the claim, a last row with a NULL token says so.
--
-- Session-bound items (only when p_owner is given) are claimed one session at a time with the single claim's rules:
--   * the session's advisory lock is only tried: a session another fetcher is claiming from right now is left to it,
--     so a batch never waits on, nor deadlocks over, session locks;
--   * the session's items in the batch must be its oldest claimable items: the batch keeps them up to the first
--     claimable item of the session it does not hold, and releases the rest (FIFO within a session);
--   * the session lease is taken or refreshed for p_owner; a session another owner won since the search is dropped.
-- When items were dropped, the search runs again for the remaining capacity, skipping those sessions (8 rounds at
-- most), so an empty result means nothing eligible was claimable.
CREATE FUNCTION ${schema}.fetch_work_items(
    p_now BIGINT, p_lock_ms BIGINT, p_token_prefix TEXT, p_owner TEXT, p_session_lock_ms BIGINT,
    p_tag_mode INT, p_tags TEXT[], p_max_items INT, p_max_bytes BIGINT, p_first_free BOOLEAN)
RETURNS TABLE (token TEXT, item TEXT, attempts INT)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_lost     TEXT[] := '{}';
    v_claimed  BIGINT[] := '{}';
    v_bytes    BIGINT := 0;
    v_round_bytes BIGINT;
    v_full     BOOLEAN := FALSE;
    v_dropped  BOOLEAN;
    v_ids      BIGINT[];
    v_rows     TID[];
    v_claimed_rows TID[] := '{}';
    v_sessions TEXT[];
    v_sizes    BIGINT[];
    v_keep     INT;
    v_session  TEXT;
    v_cut      BIGINT;
    v_newest   BIGINT;
    -- Has a lease ended by p_now on a row it keeps from the unleased index? (a range scan of the lease-end index;
    -- written here, not in a function of its own, so that its plan is cached with the claim's)
    v_expired  BOOLEAN := EXISTS (SELECT 1 FROM ${schema}.worker_queue w
                                   WHERE w.lock_token IS NOT NULL AND w.locked_until_ms <= p_now
                                     AND w.visible_at_ms <= p_now);
BEGIN
    FOR v_round IN 1..8 LOOP
        EXIT WHEN cardinality(v_claimed) >= p_max_items OR v_full;

        IF v_expired THEN
            SELECT array_agg(c.id ORDER BY c.id), array_agg(c.session_id ORDER BY c.id),
                   array_agg(c.n_bytes ORDER BY c.id), array_agg(c.row_version ORDER BY c.id)
              INTO v_ids, v_sessions, v_sizes, v_rows
              FROM (SELECT q.id, q.session_id, octet_length(q.work_item)::BIGINT AS n_bytes, q.ctid AS row_version
                      FROM ${schema}.worker_queue q
                      LEFT JOIN ${schema}.sessions s ON s.session_id = q.session_id AND s.locked_until_ms > p_now
                     WHERE q.visible_at_ms <= p_now
                       AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)
                       AND CASE p_tag_mode WHEN 0 THEN q.tag IS NULL
                                           WHEN 1 THEN q.tag = ANY (p_tags)
                                           WHEN 2 THEN q.tag IS NULL OR q.tag = ANY (p_tags)
                                           ELSE TRUE END
                       AND CASE WHEN p_owner IS NULL THEN q.session_id IS NULL
                                ELSE q.session_id IS NULL
                                     OR (q.session_id <> ALL (v_lost)
                                         AND (s.session_id IS NULL OR s.worker_id = p_owner)) END
                       AND q.id <> ALL (v_claimed)
                     ORDER BY q.id
                     LIMIT p_max_items - cardinality(v_claimed)
                       FOR UPDATE OF q SKIP LOCKED) c;
        ELSE
            SELECT array_agg(c.id ORDER BY c.id), array_agg(c.session_id ORDER BY c.id),
                   array_agg(c.n_bytes ORDER BY c.id), array_agg(c.row_version ORDER BY c.id)
              INTO v_ids, v_sessions, v_sizes, v_rows
              FROM (SELECT q.id, q.session_id, octet_length(q.work_item)::BIGINT AS n_bytes, q.ctid AS row_version
                      FROM ${schema}.worker_queue q
                      LEFT JOIN ${schema}.sessions s ON s.session_id = q.session_id AND s.locked_until_ms > p_now
                     WHERE q.visible_at_ms <= p_now
                       AND q.lock_token IS NULL
                       AND CASE p_tag_mode WHEN 0 THEN q.tag IS NULL
                                           WHEN 1 THEN q.tag = ANY (p_tags)
                                           WHEN 2 THEN q.tag IS NULL OR q.tag = ANY (p_tags)
                                           ELSE TRUE END
                       AND CASE WHEN p_owner IS NULL THEN q.session_id IS NULL
                                ELSE q.session_id IS NULL
                                     OR (q.session_id <> ALL (v_lost)
                                         AND (s.session_id IS NULL OR s.worker_id = p_owner)) END
                       AND q.id <> ALL (v_claimed)
                     ORDER BY q.id
                     LIMIT p_max_items - cardinality(v_claimed)
                       FOR UPDATE OF q SKIP LOCKED) c;
        END IF;
        EXIT WHEN v_ids IS NULL;

        -- The reply size: keep the oldest candidates that fit; stop at the first that does not.
        v_keep := 0;
        v_round_bytes := 0;
        FOR i IN 1..cardinality(v_ids) LOOP
            IF v_bytes + v_round_bytes + v_sizes[i] > p_max_bytes
               AND NOT (p_first_free AND cardinality(v_claimed) = 0 AND v_keep = 0) THEN
                v_full := TRUE;
                EXIT;
            END IF;
            v_round_bytes := v_round_bytes + v_sizes[i];
            v_keep := v_keep + 1;
        END LOOP;
        v_ids := v_ids[1:v_keep];
        v_sessions := v_sessions[1:v_keep];
        v_sizes := v_sizes[1:v_keep];
        v_rows := v_rows[1:v_keep];

        v_dropped := FALSE;
        IF p_owner IS NOT NULL THEN
            FOR v_session IN SELECT DISTINCT x.s FROM unnest(v_sessions) AS x(s) WHERE x.s IS NOT NULL ORDER BY 1
            LOOP
                IF NOT pg_try_advisory_xact_lock(hashtext('${schema}:session'), hashtext(v_session)) THEN
                    v_cut := 0; -- another fetcher is claiming from this session right now: leave it to them
                ELSE
                    -- FIFO: cut at the session's first claimable item that this call does not hold (only one
                    -- older than the newest item of the session in the batch matters).
                    SELECT max(k.id) INTO v_newest FROM unnest(v_ids, v_sessions) AS k(id, s) WHERE k.s = v_session;
                    SELECT min(o.id) INTO v_cut
                      FROM ${schema}.worker_queue o
                     WHERE o.session_id = v_session AND o.id < v_newest AND o.visible_at_ms <= p_now
                       AND (o.lock_token IS NULL OR o.locked_until_ms <= p_now)
                       AND CASE p_tag_mode WHEN 0 THEN o.tag IS NULL
                                           WHEN 1 THEN o.tag = ANY (p_tags)
                                           WHEN 2 THEN o.tag IS NULL OR o.tag = ANY (p_tags)
                                           ELSE TRUE END
                       AND o.id <> ALL (v_claimed) AND o.id <> ALL (v_ids);
                    IF EXISTS (SELECT 1 FROM unnest(v_ids, v_sessions) AS k(id, s)
                                WHERE k.s = v_session AND (v_cut IS NULL OR k.id < v_cut)) THEN
                        INSERT INTO ${schema}.sessions AS s (session_id, worker_id, locked_until_ms,
                                                             last_activity_at_ms)
                        VALUES (v_session, p_owner, p_now + p_session_lock_ms, p_now)
                        ON CONFLICT (session_id) DO UPDATE
                           SET worker_id = EXCLUDED.worker_id, locked_until_ms = EXCLUDED.locked_until_ms,
                               last_activity_at_ms = EXCLUDED.last_activity_at_ms
                         WHERE s.locked_until_ms <= p_now OR s.worker_id = p_owner;
                        IF NOT FOUND THEN
                            v_cut := 0; -- another owner took the session since the search
                        END IF;
                    END IF;
                END IF;
                IF v_cut IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(v_ids, v_sessions) AS k(id, s)
                                                  WHERE k.s = v_session AND k.id >= v_cut) THEN
                    SELECT COALESCE(array_agg(k.id ORDER BY k.id), '{}'), COALESCE(array_agg(k.s ORDER BY k.id), '{}'),
                           COALESCE(array_agg(k.n_bytes ORDER BY k.id), '{}'),
                           COALESCE(array_agg(k.row_version ORDER BY k.id), '{}')
                      INTO v_ids, v_sessions, v_sizes, v_rows
                      FROM unnest(v_ids, v_sessions, v_sizes, v_rows) AS k(id, s, n_bytes, row_version)
                     WHERE k.s IS DISTINCT FROM v_session OR k.id < v_cut;
                    v_lost := v_lost || v_session;
                    v_dropped := TRUE;
                END IF;
            END LOOP;
        END IF;

        v_claimed := v_claimed || v_ids;
        v_claimed_rows := v_claimed_rows || v_rows;
        v_bytes := v_bytes + COALESCE((SELECT sum(x) FROM unnest(v_sizes) AS x), 0);
        EXIT WHEN NOT v_dropped;
    END LOOP;

    IF cardinality(v_claimed) > 0 THEN
        RETURN QUERY
        WITH claimed AS (
            UPDATE ${schema}.worker_queue q
               SET lock_token = '@' || q.id || ':' || p_token_prefix, locked_until_ms = p_now + p_lock_ms,
                   attempt_count = q.attempt_count + 1
              FROM unnest(v_claimed_rows, v_claimed) AS t(row_version, id)
             WHERE q.ctid = t.row_version AND q.id = t.id
            RETURNING q.id, q.lock_token, q.work_item, q.attempt_count)
        SELECT c.lock_token, c.work_item, c.attempt_count FROM claimed c ORDER BY c.id;
    END IF;
    IF v_full THEN
        -- A last row with a NULL token says the byte bound stopped the claim (the reply is full).
        token := NULL;
        item := NULL;
        attempts := NULL;
        RETURN NEXT;
    END IF;
END
$$;

-- Finishes a leased activity; the completion (if any) goes to its orchestration's queue in the same transaction.
-- The single-token operations hold two statements: by primary key for a row-naming token, by the partial token
-- index for any other. One statement for both (a lookup of the row id first) costs the other tokens 6-7 us a call.
CREATE FUNCTION ${schema}.ack_work_item(
    p_token TEXT, p_now BIGINT, p_instance TEXT, p_kind TEXT, p_completion TEXT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_row     BIGINT := ${schema}.worker_token_row(p_token);
    v_session TEXT;
BEGIN
    IF v_row IS NOT NULL THEN
        DELETE FROM ${schema}.worker_queue w
         WHERE w.id = v_row AND w.lock_token IS NOT DISTINCT FROM p_token AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    ELSE
        DELETE FROM ${schema}.worker_queue w
         WHERE w.lock_token = p_token AND w.lock_token NOT LIKE '@%' AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    END IF;
    IF NOT FOUND THEN
        PERFORM ${schema}.raise_worker_token_error(p_token, p_now);
    END IF;
    IF p_completion IS NOT NULL THEN
        INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
        VALUES (p_instance, p_kind, p_completion, p_now, p_now);
    END IF;
    IF v_session IS NOT NULL THEN
        UPDATE ${schema}.sessions s SET last_activity_at_ms = p_now
         WHERE s.session_id = v_session AND s.locked_until_ms > p_now;
    END IF;
END
$$;

-- Finishes many leased activities in one transaction. Each token's row is resolved once, in req: a row-naming token
-- by parsing it (inlined), another by the partial token index (worker_row_of's lookup, written out: that function
-- cannot be inlined). One DELETE ... RETURNING over the tokens is the lease check: a token whose row is gone
-- (unknown, acked, cancelled, reclaimed by another worker) or whose lease had ended at its own ack time (p_nows, the
-- moment the runtime acked) is not deleted and gets its own answer, while the others succeed. The completions of the
-- deleted items go to their orchestrations' queues in one INSERT (list order), and their live sessions are marked
-- active (rows locked in session order, so concurrent flushes cannot deadlock on them). A token given twice is acked
-- once, at its first position.
--
-- One row per input position: acked, or else expired_ms = how long before its ack time the lease had ended (NULL:
-- no row holds the token). The acked positions mark a boolean array once, so answering takes time linear in the
-- flush's size, and when every position was acked (a flush of live leases) the answer is built without looking at
-- the queue again.
CREATE FUNCTION ${schema}.ack_work_items(
    p_tokens TEXT[], p_nows BIGINT[], p_instances TEXT[], p_kinds TEXT[], p_completions TEXT[])
RETURNS TABLE (pos INT, acked BOOLEAN, expired_ms BIGINT)
LANGUAGE plpgsql
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_done  INT[];
    v_sessions TEXT[];
    v_session_nows BIGINT[];
    v_count INT := COALESCE(cardinality(p_tokens), 0);
    v_acked BOOLEAN[];
    v_pos   INT;
BEGIN
    WITH req AS (
        SELECT DISTINCT ON (r.token) r.n::INT AS n, r.token, r.now_ms, r.instance_id, r.kind, r.completion,
               COALESCE(${schema}.worker_token_row(r.token),
                        (SELECT o.id FROM ${schema}.worker_queue o
                          WHERE o.lock_token = r.token AND o.lock_token NOT LIKE '@%')) AS row_id
          FROM unnest(p_tokens, p_nows, p_instances, p_kinds, p_completions) WITH ORDINALITY
               AS r(token, now_ms, instance_id, kind, completion, n)
         ORDER BY r.token, r.n),
    deleted AS (
        -- A nested loop over the primary key (hash and merge joins are off for this function), never a scan of the
        -- leased rows; the lease test is written so that it cannot drive an index.
        DELETE FROM ${schema}.worker_queue w USING req r
         WHERE w.id = r.row_id AND w.lock_token IS NOT DISTINCT FROM r.token AND w.locked_until_ms - r.now_ms > 0
        RETURNING r.n, w.session_id, r.now_ms, r.instance_id, r.kind, r.completion),
    completions AS (
        INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
        SELECT d.instance_id, d.kind, d.completion, d.now_ms, d.now_ms
          FROM deleted d WHERE d.completion IS NOT NULL ORDER BY d.n
        RETURNING 1)
    SELECT COALESCE(array_agg(d.n), '{}'),
           COALESCE(array_agg(d.session_id) FILTER (WHERE d.session_id IS NOT NULL), '{}'),
           COALESCE(array_agg(d.now_ms) FILTER (WHERE d.session_id IS NOT NULL), '{}')
      INTO v_done, v_sessions, v_session_nows
      FROM deleted d;

    IF cardinality(v_sessions) > 0 THEN
        PERFORM 1 FROM ${schema}.sessions s
         WHERE s.session_id = ANY (v_sessions) ORDER BY s.session_id FOR UPDATE;
        UPDATE ${schema}.sessions s SET last_activity_at_ms = GREATEST(s.last_activity_at_ms, a.now_ms)
          FROM (SELECT x.session_id, max(x.now_ms) AS now_ms
                  FROM unnest(v_sessions, v_session_nows) AS x(session_id, now_ms) GROUP BY x.session_id) a
         WHERE s.session_id = a.session_id AND s.locked_until_ms > a.now_ms;
    END IF;

    IF cardinality(v_done) = v_count THEN
        -- Each position was acked (so no token was given twice): nothing to look up.
        RETURN QUERY SELECT g, TRUE, NULL::BIGINT FROM generate_series(1, v_count) AS g;
        RETURN;
    END IF;
    v_acked := array_fill(FALSE, ARRAY[v_count]);
    FOREACH v_pos IN ARRAY v_done LOOP
        v_acked[v_pos] := TRUE;
    END LOOP;
    RETURN QUERY
    SELECT r.n::INT, v_acked[r.n::INT],
           CASE WHEN v_acked[r.n::INT] THEN NULL
                ELSE (SELECT r.now_ms - w.locked_until_ms FROM ${schema}.worker_queue w
                       WHERE w.id = ${schema}.worker_row_of(r.token) AND w.lock_token IS NOT DISTINCT FROM r.token
                         AND r.now_ms - w.locked_until_ms >= 0) END
      FROM unnest(p_tokens, p_nows) WITH ORDINALITY AS r(token, now_ms, n)
     ORDER BY r.n;
END
$$;

-- A busy worker's ack of its finished activity and claim of its next one in one call, one transaction: exactly
-- ack_work_item followed by fetch_work_item, at the same time p_now. When the ack raises (an expired or unknown
-- token), nothing is claimed and nothing is deleted.
CREATE FUNCTION ${schema}.ack_and_fetch_work_item(
    p_token TEXT, p_now BIGINT, p_instance TEXT, p_kind TEXT, p_completion TEXT,
    p_lock_ms BIGINT, p_next_token TEXT, p_owner TEXT, p_session_lock_ms BIGINT, p_tag_mode INT, p_tags TEXT[])
RETURNS TABLE (work_item TEXT, attempt_count INT)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.ack_work_item(p_token, p_now, p_instance, p_kind, p_completion);
    RETURN QUERY SELECT f.work_item, f.attempt_count
                   FROM ${schema}.fetch_work_item(p_now, p_lock_ms, p_next_token, p_owner, p_session_lock_ms,
                                                  p_tag_mode, p_tags) f;
END
$$;

CREATE FUNCTION ${schema}.renew_work_item_lock(p_token TEXT, p_now BIGINT, p_extend_ms BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_row     BIGINT := ${schema}.worker_token_row(p_token);
    v_session TEXT;
BEGIN
    IF v_row IS NOT NULL THEN
        UPDATE ${schema}.worker_queue w SET locked_until_ms = p_now + p_extend_ms
         WHERE w.id = v_row AND w.lock_token IS NOT DISTINCT FROM p_token AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    ELSE
        UPDATE ${schema}.worker_queue w SET locked_until_ms = p_now + p_extend_ms
         WHERE w.lock_token = p_token AND w.lock_token NOT LIKE '@%' AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    END IF;
    IF NOT FOUND THEN
        PERFORM ${schema}.raise_worker_token_error(p_token, p_now);
    END IF;
    IF v_session IS NOT NULL THEN
        UPDATE ${schema}.sessions s SET last_activity_at_ms = p_now
         WHERE s.session_id = v_session AND s.locked_until_ms > p_now;
    END IF;
END
$$;

-- A release is rare (failures, undecodable items), so it takes the one-statement form.
CREATE FUNCTION ${schema}.abandon_work_item(
    p_token TEXT, p_now BIGINT, p_delay_ms BIGINT, p_ignore_attempt BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ${schema}.worker_queue w
       SET lock_token = NULL, locked_until_ms = NULL,
           visible_at_ms = p_now + GREATEST(COALESCE(p_delay_ms, 0), 0),
           attempt_count = CASE WHEN p_ignore_attempt THEN GREATEST(0, w.attempt_count - 1) ELSE w.attempt_count END
     WHERE w.id = ${schema}.worker_row_of(p_token) AND w.lock_token IS NOT DISTINCT FROM p_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: no worker item holds it (unknown, acked or cancelled)'
            USING ERRCODE = 'PD001';
    END IF;
END
$$;

CREATE FUNCTION ${schema}.renew_session_locks(p_owners TEXT[], p_now BIGINT, p_extend_ms BIGINT, p_idle_ms BIGINT)
RETURNS INT
LANGUAGE sql AS $$
    WITH renewed AS (
        UPDATE ${schema}.sessions s SET locked_until_ms = p_now + p_extend_ms
         WHERE s.worker_id = ANY (p_owners) AND s.locked_until_ms > p_now
           AND s.last_activity_at_ms > p_now - p_idle_ms
        RETURNING 1)
    SELECT count(*)::INT FROM renewed;
$$;

CREATE FUNCTION ${schema}.cleanup_orphaned_sessions(p_now BIGINT)
RETURNS INT
LANGUAGE sql AS $$
    WITH removed AS (
        DELETE FROM ${schema}.sessions s
         WHERE s.locked_until_ms <= p_now
           AND NOT EXISTS (SELECT 1 FROM ${schema}.worker_queue w WHERE w.session_id = s.session_id)
        RETURNING 1)
    SELECT count(*)::INT FROM removed;
$$;


-- ======== hand-over ================================================================================================

-- Hand-over (docs/long-polling.md "Hand-over"): an item a provider writes while one of its own fetches is parked
-- for it is written already leased to that fetch, in the write's own transaction, and handed over after the commit;
-- the fetch returns it without a claim. The lease is exactly what the fetch's claim would have taken: its token, its
-- lock time from the write's time, attempt 1.

-- enqueue_worker_item, with the item leased to p_token until p_now + p_lock_ms.
CREATE FUNCTION ${schema}.enqueue_worker_item_leased(
    p_item TEXT, p_now BIGINT, p_instance TEXT, p_execution_id BIGINT, p_activity_id BIGINT,
    p_session TEXT, p_tag TEXT, p_token TEXT, p_lock_ms BIGINT)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                        activity_id, session_id, tag, lock_token, locked_until_ms, attempt_count)
    VALUES (p_item, p_now, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag,
            p_token, p_now + p_lock_ms, 1);
$$;

-- ack_orchestration_turn, then the turn's own new worker rows named by a token in p_tokens (aligned with
-- p_worker_items; NULL: not handed over) are leased to that token. Only rows this transaction inserted qualify
-- (xmin), so an older row of the same activity is never taken; an activity the turn also cancelled is gone and is
-- simply not in handed_over. Returns the turn's next visibility and the tokens that were applied.
CREATE FUNCTION ${schema}.ack_orchestration_turn_handing_over(
    p_token TEXT, p_now BIGINT, p_execution_id BIGINT,
    p_event_ids BIGINT[], p_event_types TEXT[], p_event_data TEXT[],
    p_worker_items TEXT[], p_worker_instances TEXT[], p_worker_executions BIGINT[], p_worker_activities BIGINT[],
    p_worker_sessions TEXT[], p_worker_tags TEXT[],
    p_orch_instances TEXT[], p_orch_kinds TEXT[], p_orch_items TEXT[], p_orch_visible_at BIGINT[],
    p_status TEXT, p_output TEXT, p_name TEXT, p_version TEXT, p_parent TEXT, p_pinned_version BIGINT,
    p_custom_status_action INT, p_custom_status TEXT,
    p_kv_ops TEXT[], p_kv_keys TEXT[], p_kv_values TEXT[], p_kv_updated_ms BIGINT[],
    p_cancel_instances TEXT[], p_cancel_executions BIGINT[], p_cancel_activities BIGINT[],
    p_tokens TEXT[], p_lock_ms BIGINT[])
RETURNS TABLE (next_visible_at BIGINT, handed_over TEXT[])
LANGUAGE plpgsql AS $$
DECLARE
    v_next   BIGINT;
    v_handed TEXT[];
BEGIN
    v_next := ${schema}.ack_orchestration_turn(
        p_token, p_now, p_execution_id, p_event_ids, p_event_types, p_event_data,
        p_worker_items, p_worker_instances, p_worker_executions, p_worker_activities, p_worker_sessions, p_worker_tags,
        p_orch_instances, p_orch_kinds, p_orch_items, p_orch_visible_at,
        p_status, p_output, p_name, p_version, p_parent, p_pinned_version, p_custom_status_action, p_custom_status,
        p_kv_ops, p_kv_keys, p_kv_values, p_kv_updated_ms, p_cancel_instances, p_cancel_executions,
        p_cancel_activities);
    WITH leased AS (
        UPDATE ${schema}.worker_queue w
           SET lock_token = h.token, locked_until_ms = p_now + h.lock_ms, attempt_count = 1
          FROM unnest(p_worker_instances, p_worker_executions, p_worker_activities, p_tokens, p_lock_ms)
               AS h(instance_id, execution_id, activity_id, token, lock_ms)
         WHERE h.token IS NOT NULL
           AND w.instance_id = h.instance_id AND w.execution_id = h.execution_id AND w.activity_id = h.activity_id
           AND w.lock_token IS NULL
           AND w.xmin::TEXT::BIGINT = txid_current() % 4294967296
        RETURNING w.lock_token)
    SELECT array_agg(l.lock_token) INTO v_handed FROM leased l;
    RETURN QUERY SELECT v_next, COALESCE(v_handed, '{}'::TEXT[]);
END
$$;

-- enqueue_orchestrator_item, then p_instance claimed for p_token as the fetch would claim it now (orphans are left
-- alone: the hand-over never decides for a fetch what to drop). No row: written, not claimed; the writer then
-- announces it as usual.
CREATE FUNCTION ${schema}.enqueue_orchestrator_item_claiming(
    p_instance TEXT, p_kind TEXT, p_item TEXT, p_visible_at BIGINT, p_now BIGINT,
    p_token TEXT, p_lock_ms BIGINT, p_min_version BIGINT, p_max_version BIGINT)
RETURNS TABLE (
    instance_id TEXT, orchestration_name TEXT, orchestration_version TEXT, execution_id BIGINT,
    has_instance BOOLEAN, attempt_count INT, messages TEXT[], event_ids BIGINT[], event_types TEXT[],
    event_data TEXT[], kv_keys TEXT[], kv_values TEXT[], kv_updated_ms BIGINT[])
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.enqueue_orchestrator_item(p_instance, p_kind, p_item, p_visible_at, p_now);
    RETURN QUERY SELECT * FROM ${schema}.claim_orchestration_instance(
        p_instance, p_now, p_now, p_lock_ms, p_token, p_min_version, p_max_version, FALSE);
END
$$;

-- ack_work_item, then the completion's instance claimed for p_claim_token as enqueue_orchestrator_item_claiming
-- does. A failed ack raises before anything is claimed.
CREATE FUNCTION ${schema}.ack_work_item_claiming(
    p_token TEXT, p_now BIGINT, p_instance TEXT, p_kind TEXT, p_completion TEXT,
    p_claim_token TEXT, p_lock_ms BIGINT, p_min_version BIGINT, p_max_version BIGINT)
RETURNS TABLE (
    instance_id TEXT, orchestration_name TEXT, orchestration_version TEXT, execution_id BIGINT,
    has_instance BOOLEAN, attempt_count INT, messages TEXT[], event_ids BIGINT[], event_types TEXT[],
    event_data TEXT[], kv_keys TEXT[], kv_values TEXT[], kv_updated_ms BIGINT[])
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.ack_work_item(p_token, p_now, p_instance, p_kind, p_completion);
    RETURN QUERY SELECT * FROM ${schema}.claim_orchestration_instance(
        p_instance, p_now, p_now, p_lock_ms, p_claim_token, p_min_version, p_max_version, FALSE);
END
$$;

-- Hand-over across processes (docs/long-polling.md "Hand-over across processes", opt-in): a wake from another
-- process ends in a claim on a connection that sat idle for the whole wait. Instead, a process says in
-- parked_fetches how many of its fetches are parked for untagged items without a session, and another process's
-- enqueue of such an item leases it to one of them in the enqueue's own transaction and sends it in the NOTIFY.

-- The parked process's account of its takers; waiting 0 keeps the row (the next park only updates it).
CREATE FUNCTION ${schema}.register_parked_fetches(
    p_origin TEXT, p_liveness_key BIGINT, p_waiting INT, p_lock_ms BIGINT, p_now BIGINT)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.parked_fetches (origin, liveness_key, waiting, lock_ms, updated_at_ms)
    VALUES (p_origin, p_liveness_key, p_waiting, p_lock_ms, p_now)
    ON CONFLICT (origin) DO UPDATE
       SET liveness_key = EXCLUDED.liveness_key, waiting = EXCLUDED.waiting, lock_ms = EXCLUDED.lock_ms,
           updated_at_ms = EXCLUDED.updated_at_ms;
$$;

CREATE FUNCTION ${schema}.unregister_parked_fetches(p_origin TEXT)
RETURNS VOID
LANGUAGE sql AS $$
    DELETE FROM ${schema}.parked_fetches WHERE origin = p_origin;
$$;

-- enqueue_worker_item, offered to a parked fetch of another process first. An untagged item without a session whose
-- notification fits (PostgreSQL refuses payloads of 8000 bytes and more) is written leased to p_token for the
-- taker's lock time, attempt 1, and sent on p_channel as
--     h|<taker origin>|<token>|<lock ms>|<leased until ms>|<item>
-- Returns the taker's origin; NULL when the item was written unleased, its announcement p_inline (may be NULL) then
-- notified here as the plain enqueue's notifying form would. Never offers to p_origin (the writer's own fetches take
-- its items in-process). An enqueue that can take a taker's liveness key (shared) knows nobody holds it: it removes
-- the row and moves on.
CREATE FUNCTION ${schema}.enqueue_worker_item_offered(
    p_item TEXT, p_now BIGINT, p_instance TEXT, p_execution_id BIGINT, p_activity_id BIGINT,
    p_session TEXT, p_tag TEXT, p_origin TEXT, p_token TEXT, p_channel TEXT, p_inline TEXT[])
RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_taker   RECORD;
    v_payload TEXT;
BEGIN
    IF p_session IS NULL AND p_tag IS NULL THEN
        FOR v_taker IN
            SELECT f.origin, f.liveness_key, f.lock_ms
              FROM ${schema}.parked_fetches f
             WHERE f.waiting > 0 AND f.origin <> p_origin
             ORDER BY f.updated_at_ms
             LIMIT 4
               FOR UPDATE SKIP LOCKED
        LOOP
            IF pg_try_advisory_xact_lock_shared(v_taker.liveness_key) THEN
                -- Nobody holds the key: the taker's listener session is gone, so nobody would hear the item.
                DELETE FROM ${schema}.parked_fetches WHERE origin = v_taker.origin;
                CONTINUE;
            END IF;
            v_payload := 'h|' || v_taker.origin || '|' || p_token || '|' || v_taker.lock_ms || '|'
                         || (p_now + v_taker.lock_ms) || '|' || p_item;
            EXIT WHEN octet_length(v_payload) >= 8000;
            UPDATE ${schema}.parked_fetches SET waiting = waiting - 1 WHERE origin = v_taker.origin;
            PERFORM ${schema}.enqueue_worker_item_leased(p_item, p_now, p_instance, p_execution_id, p_activity_id,
                                                         NULL, NULL, p_token, v_taker.lock_ms);
            PERFORM pg_notify(p_channel, v_payload);
            RETURN v_taker.origin;
        END LOOP;
    END IF;
    PERFORM ${schema}.enqueue_worker_item(p_item, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag);
    PERFORM pg_notify(p_channel, p) FROM unnest(p_inline) AS p;
    RETURN NULL;
END
$$;


-- ======== history, custom status and key-value reads ===============================================================

-- Events of one execution (NULL = the latest, i.e. the highest execution id, 1 when there is none).
CREATE FUNCTION ${schema}.read_history(p_instance TEXT, p_execution_id BIGINT)
RETURNS TABLE (event_id BIGINT, event_type TEXT, event_data TEXT)
LANGUAGE sql STABLE AS $$
    SELECT h.event_id, h.event_type, h.event_data
      FROM ${schema}.history h
     WHERE h.instance_id = p_instance
       AND h.execution_id = COALESCE(p_execution_id,
             (SELECT max(e.execution_id) FROM ${schema}.executions e WHERE e.instance_id = p_instance), 1)
     ORDER BY h.event_id;
$$;

CREATE FUNCTION ${schema}.append_history(
    p_instance TEXT, p_execution_id BIGINT, p_now BIGINT, p_event_ids BIGINT[], p_event_types TEXT[],
    p_event_data TEXT[])
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.history (instance_id, execution_id, event_id, event_type, event_data, created_at_ms)
    SELECT p_instance, p_execution_id, e.id, e.type, e.data, p_now
      FROM unnest(p_event_ids, p_event_types, p_event_data) AS e(id, type, data)
    ON CONFLICT DO NOTHING;
$$;

CREATE FUNCTION ${schema}.get_custom_status(p_instance TEXT, p_last_seen BIGINT)
RETURNS TABLE (custom_status TEXT, custom_status_version BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT i.custom_status, i.custom_status_version FROM ${schema}.instances i
     WHERE i.instance_id = p_instance AND i.custom_status_version > p_last_seen;
$$;

-- The live key-value view: the committed store overlaid by the current execution's delta (tombstones hide).
CREATE FUNCTION ${schema}.get_kv_values(p_instance TEXT, p_key TEXT)
RETURNS TABLE (key TEXT, value TEXT)
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(d.key, s.key), CASE WHEN d.key IS NOT NULL THEN d.value ELSE s.value END
      FROM (SELECT * FROM ${schema}.kv_store WHERE instance_id = p_instance AND (p_key IS NULL OR key = p_key)) s
      FULL JOIN (SELECT * FROM ${schema}.kv_delta WHERE instance_id = p_instance AND (p_key IS NULL OR key = p_key)) d
        ON d.key = s.key
     WHERE CASE WHEN d.key IS NOT NULL THEN d.value IS NOT NULL ELSE TRUE END;
$$;

CREATE FUNCTION ${schema}.get_instance_stats(p_instance TEXT)
RETURNS TABLE (history_count BIGINT, history_bytes BIGINT, started_event TEXT, kv_keys BIGINT, kv_bytes BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) FROM ${schema}.history h
             WHERE h.instance_id = i.instance_id AND h.execution_id = i.current_execution_id),
           (SELECT COALESCE(sum(octet_length(h.event_data)), 0) FROM ${schema}.history h
             WHERE h.instance_id = i.instance_id AND h.execution_id = i.current_execution_id),
           (SELECT h.event_data FROM ${schema}.history h
             WHERE h.instance_id = i.instance_id AND h.execution_id = i.current_execution_id AND h.event_id = 1
               AND h.event_type = 'OrchestrationStarted'),
           (SELECT count(*) FROM ${schema}.get_kv_values(i.instance_id, NULL)),
           (SELECT COALESCE(sum(octet_length(s.value)), 0) FROM ${schema}.kv_store s WHERE s.instance_id = i.instance_id)
           + (SELECT COALESCE(sum(octet_length(d.value)), 0) FROM ${schema}.kv_delta d WHERE d.instance_id = i.instance_id)
      FROM ${schema}.instances i
     WHERE i.instance_id = p_instance;
$$;


-- ======== management ===============================================================================================

-- The cold path. Bulk operations are composed by the provider from these per-tree and per-instance calls, so each
-- transaction stays bounded.

CREATE FUNCTION ${schema}.list_instances(p_status TEXT)
RETURNS TABLE (instance_id TEXT)
LANGUAGE sql STABLE AS $$
    SELECT i.instance_id
      FROM ${schema}.instances i
      LEFT JOIN ${schema}.executions e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE p_status IS NULL OR COALESCE(e.status, 'Running') = p_status
     ORDER BY i.created_at_ms DESC, i.instance_id;
$$;

-- One page of instance ids, for the listings that page (the Durable Task sidecar's instance and entity queries). The
-- page is read in the primary key's order (the database's collation) from just after p_after, through the primary
-- key index; the prefix is a filter, not a range, because under a linguistic collation the ids that start with a
-- prefix need not sort next to each other. Paging a whole hub therefore reads each id about once. A LIMIT of NULL
-- would read everything: the caller gives one.
CREATE FUNCTION ${schema}.list_instances_after(p_after TEXT, p_prefix TEXT, p_limit INT)
RETURNS TABLE (instance_id TEXT)
LANGUAGE sql STABLE AS $$
    SELECT i.instance_id
      FROM ${schema}.instances i
     WHERE i.instance_id > p_after
       AND starts_with(i.instance_id, p_prefix)
     ORDER BY i.instance_id
     LIMIT p_limit;
$$;

CREATE FUNCTION ${schema}.list_executions(p_instance TEXT)
RETURNS TABLE (execution_id BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT e.execution_id FROM ${schema}.executions e WHERE e.instance_id = p_instance ORDER BY e.execution_id;
$$;

CREATE FUNCTION ${schema}.get_instance_info(p_instance TEXT)
RETURNS TABLE (instance_id TEXT, orchestration_name TEXT, orchestration_version TEXT, current_execution_id BIGINT,
               status TEXT, output TEXT, created_at_ms BIGINT, updated_at_ms BIGINT, parent_instance_id TEXT)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT i.instance_id, i.orchestration_name, COALESCE(i.orchestration_version, 'unknown'),
           i.current_execution_id, COALESCE(e.status, 'Running'), e.output, i.created_at_ms,
           COALESCE(i.updated_at_ms, i.created_at_ms), i.parent_instance_id
      FROM ${schema}.instances i
      LEFT JOIN ${schema}.executions e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE i.instance_id = p_instance;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance USING ERRCODE = 'PD003';
    END IF;
END
$$;

CREATE FUNCTION ${schema}.get_execution_info(p_instance TEXT, p_execution_id BIGINT)
RETURNS TABLE (execution_id BIGINT, status TEXT, output TEXT, started_at_ms BIGINT, completed_at_ms BIGINT,
               event_count INT)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT e.execution_id, e.status, e.output, e.started_at_ms, e.completed_at_ms,
           (SELECT count(*)::INT FROM ${schema}.history h
             WHERE h.instance_id = e.instance_id AND h.execution_id = e.execution_id)
      FROM ${schema}.executions e
     WHERE e.instance_id = p_instance AND e.execution_id = p_execution_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Execution % of instance % not found', p_execution_id, p_instance USING ERRCODE = 'PD003';
    END IF;
END
$$;

CREATE FUNCTION ${schema}.get_system_metrics()
RETURNS TABLE (total_instances BIGINT, total_executions BIGINT, running_instances BIGINT,
               completed_instances BIGINT, failed_instances BIGINT, total_events BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT count(*),
           (SELECT count(*) FROM ${schema}.executions),
           count(*) FILTER (WHERE COALESCE(e.status, 'Running') = 'Running'),
           count(*) FILTER (WHERE e.status = 'Completed'),
           count(*) FILTER (WHERE e.status = 'Failed'),
           (SELECT count(*) FROM ${schema}.history)
      FROM ${schema}.instances i
      LEFT JOIN ${schema}.executions e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id;
$$;

-- Messages claimable now: visible and not held by a live lease.
CREATE FUNCTION ${schema}.get_queue_depths(p_now BIGINT)
RETURNS TABLE (orchestrator_depth BIGINT, worker_depth BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) FROM ${schema}.orchestrator_queue q
             WHERE q.visible_at_ms <= p_now AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)),
           (SELECT count(*) FROM ${schema}.worker_queue w
             WHERE w.visible_at_ms <= p_now AND (w.lock_token IS NULL OR w.locked_until_ms <= p_now));
$$;

CREATE FUNCTION ${schema}.list_children(p_instance TEXT)
RETURNS TABLE (instance_id TEXT)
LANGUAGE sql STABLE AS $$
    SELECT i.instance_id FROM ${schema}.instances i WHERE i.parent_instance_id = p_instance ORDER BY i.instance_id;
$$;

-- One row: the parent (NULL for a root). Unknown instance: PD003.
CREATE FUNCTION ${schema}.get_parent_id(p_instance TEXT)
RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_parent TEXT;
BEGIN
    SELECT i.parent_instance_id INTO v_parent FROM ${schema}.instances i WHERE i.instance_id = p_instance;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance USING ERRCODE = 'PD003';
    END IF;
    RETURN v_parent;
END
$$;

-- Deletes the given instances and everything they own, in one transaction, or nothing. A delete set that would
-- leave a child whose parent is deleted is refused (PD002), so nothing ever points at an instance that is gone.
CREATE FUNCTION ${schema}.delete_instances_atomic(p_ids TEXT[], p_force BOOLEAN)
RETURNS TABLE (instances_deleted BIGINT, executions_deleted BIGINT, events_deleted BIGINT,
               queue_messages_deleted BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    v_running TEXT;
    v_orphan  TEXT;
    v_parent  TEXT;
    v_orch    BIGINT;
    v_worker  BIGINT;
BEGIN
    -- Lock the rows first so a concurrent ack cannot slip a turn in between the checks and the deletes.
    PERFORM 1 FROM ${schema}.instances i WHERE i.instance_id = ANY (p_ids) ORDER BY i.instance_id FOR UPDATE;

    IF NOT p_force THEN
        SELECT i.instance_id INTO v_running
          FROM ${schema}.instances i
          JOIN ${schema}.executions e
            ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
         WHERE i.instance_id = ANY (p_ids) AND e.status = 'Running'
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'Instance % is Running; cancel it first or delete with force', v_running
                USING ERRCODE = 'PD004';
        END IF;
    END IF;

    SELECT c.instance_id, c.parent_instance_id INTO v_orphan, v_parent
      FROM ${schema}.instances c
     WHERE c.parent_instance_id = ANY (p_ids) AND NOT (c.instance_id = ANY (p_ids))
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'Orphan detected: child instance % of % is not in the delete set; delete the whole tree',
            v_orphan, v_parent USING ERRCODE = 'PD002';
    END IF;

    DELETE FROM ${schema}.history h WHERE h.instance_id = ANY (p_ids);
    GET DIAGNOSTICS events_deleted = ROW_COUNT;
    DELETE FROM ${schema}.executions e WHERE e.instance_id = ANY (p_ids);
    GET DIAGNOSTICS executions_deleted = ROW_COUNT;
    DELETE FROM ${schema}.orchestrator_queue q WHERE q.instance_id = ANY (p_ids);
    GET DIAGNOSTICS v_orch = ROW_COUNT;
    DELETE FROM ${schema}.worker_queue w WHERE w.instance_id = ANY (p_ids);
    GET DIAGNOSTICS v_worker = ROW_COUNT;
    queue_messages_deleted := v_orch + v_worker;
    -- Removing the lease makes an in-flight ack of a deleted instance fail instead of recreating it.
    DELETE FROM ${schema}.instance_locks l WHERE l.instance_id = ANY (p_ids);
    DELETE FROM ${schema}.kv_delta d WHERE d.instance_id = ANY (p_ids);
    DELETE FROM ${schema}.kv_store s WHERE s.instance_id = ANY (p_ids);
    DELETE FROM ${schema}.instances i WHERE i.instance_id = ANY (p_ids);
    GET DIAGNOSTICS instances_deleted = ROW_COUNT;
    RETURN NEXT;
END
$$;

-- Purges instances without their sub-orchestrations (the Durable Task SDKs' non-recursive purge): a kept child's
-- parent_instance_id is cleared in the same transaction as its parent's deletion, so it becomes a root that stays
-- listable, queryable and deletable on its own. Its history still names the parent in its start event; a result it
-- later sends there finds no instance and is dropped like any message for an instance that does not exist.
-- Everything else is delete_instances_atomic's. The instance rows are locked before the children are updated, in the
-- order delete_instances_atomic locks them, so a purge and a concurrent delete of the same instances wait for each
-- other instead of deadlocking.
CREATE FUNCTION ${schema}.delete_instances_keeping_children(p_ids TEXT[], p_force BOOLEAN)
RETURNS TABLE (instances_deleted BIGINT, executions_deleted BIGINT, events_deleted BIGINT,
               queue_messages_deleted BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM ${schema}.instances i WHERE i.instance_id = ANY (p_ids) ORDER BY i.instance_id FOR UPDATE;
    UPDATE ${schema}.instances c
       SET parent_instance_id = NULL
     WHERE c.parent_instance_id = ANY (p_ids) AND NOT (c.instance_id = ANY (p_ids));
    RETURN QUERY SELECT * FROM ${schema}.delete_instances_atomic(p_ids, p_force);
END
$$;

-- Root instances whose current execution has ended, for bulk deletion.
CREATE FUNCTION ${schema}.select_deletable_roots(p_ids TEXT[], p_completed_before BIGINT, p_limit INT)
RETURNS TABLE (instance_id TEXT)
LANGUAGE sql STABLE AS $$
    SELECT i.instance_id
      FROM ${schema}.instances i
      JOIN ${schema}.executions e ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE i.parent_instance_id IS NULL
       AND e.status IN ('Completed', 'Failed', 'ContinuedAsNew')
       AND (p_ids IS NULL OR i.instance_id = ANY (p_ids))
       AND (p_completed_before IS NULL OR e.completed_at_ms < p_completed_before)
     ORDER BY i.created_at_ms, i.instance_id
     LIMIT p_limit;
$$;

-- Instances considered by bulk pruning (running ones included: pruning never touches the current execution).
CREATE FUNCTION ${schema}.select_prunable_instances(p_ids TEXT[], p_completed_before BIGINT, p_limit INT)
RETURNS TABLE (instance_id TEXT)
LANGUAGE sql STABLE AS $$
    SELECT i.instance_id
      FROM ${schema}.instances i
     WHERE (p_ids IS NULL OR i.instance_id = ANY (p_ids))
       AND (p_completed_before IS NULL OR EXISTS (
                SELECT 1 FROM ${schema}.executions e
                 WHERE e.instance_id = i.instance_id AND e.completed_at_ms < p_completed_before))
     ORDER BY i.created_at_ms, i.instance_id
     LIMIT p_limit;
$$;

-- Deletes old executions of one instance: never the current one, never a running one.
CREATE FUNCTION ${schema}.prune_executions(p_instance TEXT, p_keep_last INT, p_completed_before BIGINT)
RETURNS TABLE (executions_deleted BIGINT, events_deleted BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    v_current BIGINT;
    v_doomed  BIGINT[];
BEGIN
    SELECT i.current_execution_id INTO v_current FROM ${schema}.instances i WHERE i.instance_id = p_instance
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance USING ERRCODE = 'PD003';
    END IF;
    SELECT COALESCE(array_agg(e.execution_id), '{}') INTO v_doomed
      FROM ${schema}.executions e
     WHERE e.instance_id = p_instance
       AND e.execution_id <> v_current
       AND e.status <> 'Running'
       AND (p_completed_before IS NULL OR e.completed_at_ms < p_completed_before)
       AND e.execution_id NOT IN (SELECT k.execution_id FROM ${schema}.executions k
                                   WHERE k.instance_id = p_instance
                                   ORDER BY k.execution_id DESC
                                   LIMIT GREATEST(COALESCE(p_keep_last, 1), 1));
    DELETE FROM ${schema}.history h WHERE h.instance_id = p_instance AND h.execution_id = ANY (v_doomed);
    GET DIAGNOSTICS events_deleted = ROW_COUNT;
    DELETE FROM ${schema}.executions e WHERE e.instance_id = p_instance AND e.execution_id = ANY (v_doomed);
    GET DIAGNOSTICS executions_deleted = ROW_COUNT;
    RETURN NEXT;
END
$$;


-- ======== activation and the provider's write marks ================================================================

-- Long polling is activated per schema. The activation is the hub_settings row 'long_polling' (read by providers:
-- every provider of an activated schema announces its committed writes) and the notify triggers' enabled state
-- (for every other writer), changed together by set_activation under the schema's migration lock.
INSERT INTO ${schema}.hub_settings (name, value) VALUES ('long_polling', 'off');

CREATE FUNCTION ${schema}.long_polling_activated()
RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT s.value = 'on' FROM ${schema}.hub_settings s WHERE s.name = 'long_polling'), FALSE);
$$;

-- The setting alone; set_activation changes it together with the triggers.
CREATE FUNCTION ${schema}.set_long_polling(p_enabled BOOLEAN)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.hub_settings (name, value)
    VALUES ('long_polling', CASE WHEN p_enabled THEN 'on' ELSE 'off' END)
    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value;
$$;

-- How many of the schema's notify triggers are enabled (all or none in normal operation).
CREATE FUNCTION ${schema}.notify_trigger_state()
RETURNS TABLE (enabled INT, total INT)
LANGUAGE sql STABLE AS $$
    SELECT count(*) FILTER (WHERE t.tgenabled <> 'D')::INT, count(*)::INT
      FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = '${schema_name}' AND t.tgname LIKE 'pgdurable\_notify\_%';
$$;

-- Enables or disables every notify trigger of the schema that is not already so. DDL: each ALTER waits for the
-- table's running writes and holds new ones back until it commits, so callers bound it with a lock_timeout.
CREATE FUNCTION ${schema}.set_notify_triggers(p_enabled BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN SELECT c.relname, t.tgname
               FROM pg_trigger t
               JOIN pg_class c ON c.oid = t.tgrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = '${schema_name}' AND t.tgname LIKE 'pgdurable\_notify\_%'
                AND (t.tgenabled = 'D') = p_enabled
              ORDER BY c.relname, t.tgname
    LOOP
        EXECUTE format('ALTER TABLE %I.%I %s TRIGGER %I', '${schema_name}', r.relname,
                       CASE WHEN p_enabled THEN 'ENABLE' ELSE 'DISABLE' END, r.tgname);
    END LOOP;
END
$$;

CREATE FUNCTION ${schema}.set_activation(p_enabled BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.set_long_polling(p_enabled);
    PERFORM ${schema}.set_notify_triggers(p_enabled);
END
$$;

-- The provider's write mark. The provider wraps the time argument of every write in provider_write(...), which marks
-- its transaction with a transaction-local setting (so it holds behind a transaction-pooling proxy):
-- pgdurable.announced = the schema, which the notify triggers' WHEN clause skips. The provider announces those
-- writes itself after the commit, in a short transaction that writes nothing to disk: a NOTIFY inside a transaction
-- takes a database-wide lock at commit until the commit record is flushed, so every notifying transaction of the
-- database would wait for the previous one's flush.
CREATE FUNCTION ${schema}.provider_write(p_now BIGINT)
RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('pgdurable.announced', '${schema_name}', true);
    RETURN p_now;
END
$$;

-- The same mark for the batched ack, whose time argument is one time per item.
CREATE FUNCTION ${schema}.provider_write(p_nows BIGINT[])
RETURNS BIGINT[]
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('pgdurable.announced', '${schema_name}', true);
    RETURN p_nows;
END
$$;

-- The same mark for writes without a time argument (deleting instances).
CREATE FUNCTION ${schema}.provider_write(p_flag BOOLEAN)
RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('pgdurable.announced', '${schema_name}', true);
    RETURN p_flag;
END
$$;

-- The write mark of a claim (a fetch of either queue): provider_write's, and the claim's transaction commits
-- without waiting for its WAL flush (synchronous_commit off for this transaction only). A claim is a lease, soft
-- state that the contract already lets expire: should the server crash before the flush, the claim is lost and its
-- item or instance is claimable again, exactly as after a lease expiry; the worker holding it then finds its token
-- invalid at its ack, which stays a synchronous commit (as do enqueues, turn acks and worker acks). The flush wait
-- is about half of a claim's time. Transaction-local, so it holds behind a transaction-pooling proxy.
CREATE FUNCTION ${schema}.provider_claim(p_now BIGINT)
RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN ${schema}.provider_write(p_now);
END
$$;


-- ======== long-poll scans ==========================================================================================

-- Read-only questions long polling asks: what is claimable now (the fallback probe, and the verification of a due
-- lease end) and when more becomes claimable (timer scans after a reconnect, periodically, and when tracked
-- deadlines overflowed). Rows: kind 'o' or 'w', at_ms, n (instances for 'o', items for 'w'; 0 = a lease ends),
-- untagged, tags, sessions. PL/pgSQL keeps their plans: a LANGUAGE sql function that is not inlined is planned
-- again on every call, and a lease end's verification waits for this answer.

-- What is claimable at p_now, counted up to 64 per queue. The function-level lock_timeout keeps the probe from
-- queueing behind an exclusive lock.
CREATE FUNCTION ${schema}.claimable_now(p_now BIGINT)
RETURNS TABLE (kind TEXT, at_ms BIGINT, n BIGINT, untagged BOOLEAN, tags TEXT[], sessions BOOLEAN)
LANGUAGE plpgsql STABLE
SET lock_timeout = '200ms'
AS $$
BEGIN
    RETURN QUERY
    SELECT 'o'::TEXT, p_now, count(DISTINCT c.instance_id), TRUE, NULL::TEXT[], FALSE
      FROM (SELECT q.instance_id
              FROM ${schema}.orchestrator_queue q
             WHERE q.visible_at_ms <= p_now
               AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)
               AND NOT EXISTS (SELECT 1 FROM ${schema}.instance_locks l
                                WHERE l.instance_id = q.instance_id AND l.locked_until_ms > p_now)
             ORDER BY q.visible_at_ms, q.id
             LIMIT 64) c
    HAVING count(*) > 0
    UNION ALL
    SELECT 'w'::TEXT, p_now, count(*), bool_or(c.tag IS NULL),
           COALESCE(array_agg(DISTINCT c.tag) FILTER (WHERE c.tag IS NOT NULL), '{}'), bool_or(c.session_id IS NOT NULL)
      FROM (SELECT w.tag, w.session_id
              FROM ${schema}.worker_queue w
             WHERE w.visible_at_ms <= p_now AND (w.lock_token IS NULL OR w.locked_until_ms <= p_now)
             ORDER BY w.id
             LIMIT 64) c
    HAVING count(*) > 0;
END
$$;

-- claimable_now plus the earliest p_limit future times of each kind: delayed messages and items, orchestration and
-- activity lease ends, session lease ends. Each is found by an index, not by scanning the queues.
CREATE FUNCTION ${schema}.next_deadlines(p_now BIGINT, p_limit INT)
RETURNS TABLE (kind TEXT, at_ms BIGINT, n BIGINT, untagged BOOLEAN, tags TEXT[], sessions BOOLEAN)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT * FROM ${schema}.claimable_now(p_now)
    UNION ALL
    (SELECT 'o'::TEXT, q.visible_at_ms, 1::BIGINT, TRUE, NULL::TEXT[], FALSE FROM ${schema}.orchestrator_queue q
      WHERE q.visible_at_ms > p_now ORDER BY q.visible_at_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'o'::TEXT, l.locked_until_ms, 0::BIGINT, TRUE, NULL::TEXT[], FALSE FROM ${schema}.instance_locks l
      WHERE l.locked_until_ms > p_now ORDER BY l.locked_until_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w'::TEXT, w.visible_at_ms, 1::BIGINT, w.tag IS NULL,
            CASE WHEN w.tag IS NULL THEN '{}'::TEXT[] ELSE ARRAY[w.tag] END, w.session_id IS NOT NULL
       FROM ${schema}.worker_queue w
      WHERE w.lock_token IS NULL AND w.visible_at_ms > p_now ORDER BY w.visible_at_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w'::TEXT, w.locked_until_ms, 0::BIGINT, w.tag IS NULL,
            CASE WHEN w.tag IS NULL THEN '{}'::TEXT[] ELSE ARRAY[w.tag] END, w.session_id IS NOT NULL
       FROM ${schema}.worker_queue w
      WHERE w.lock_token IS NOT NULL AND w.locked_until_ms > p_now ORDER BY w.locked_until_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w'::TEXT, s.locked_until_ms, 0::BIGINT, TRUE, NULL::TEXT[], TRUE FROM ${schema}.sessions s
      WHERE s.locked_until_ms > p_now ORDER BY s.locked_until_ms LIMIT p_limit);
END
$$;


-- ======== notify triggers ==========================================================================================

-- Wake-ups from every writer. A provider announces its own commits; these triggers wake parked fetches for every
-- other writer too: an application's trigger, a service in another language, an operator's psql session, the SQL
-- API. They are installed DISABLED below; activation enables them.
--
-- A provider's announced writes skip them (the WHEN clause reads provider_write's mark). What remains of the
-- triggers on those writes is PostgreSQL's capture of the transition tables, which it does for every defined
-- REFERENCING trigger, enabled or not.
--
-- One NOTIFY per statement and queue, never one per row, nothing when no row qualifies; the payloads are those the
-- listener reads (docs/long-polling.md):
--   o|<at_ms>|<n>                   n instances claimable from at_ms (n = 0: a lease ends at at_ms)
--   w|<at_ms>|<n>|<u>|<tags>|<s>    worker: u = 1 untagged items, tags comma-separated or '*', s = 1 session items
--   s|<at_ms>                       a session lease ends at at_ms
-- Orchestrator rows are counted the way the announcer merges due hints: every instance whose message is due (at or
-- before the database clock) in one payload at the latest due time; only when none is due does the payload name the
-- earliest future time. Other future times of the same statement reach other processes through a timer scan or the
-- fallback probe.

-- The tag field of a worker payload: the listener routes by it, so a tag it could misread becomes "any tag".
CREATE FUNCTION ${schema}.notify_tag_field(p_tags TEXT[])
RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN cardinality(p_tags) = 0 THEN ''
                WHEN cardinality(p_tags) > 5
                  OR EXISTS (SELECT 1 FROM unnest(p_tags) t WHERE t ~ '[|,]' OR length(t) > 64) THEN '*'
                ELSE array_to_string(p_tags, ',') END;
$$;

-- One orchestrator payload for messages (p_at, p_instance) of one statement: the due ones together at the latest due
-- time, else the earliest future time; nothing for no rows.
CREATE FUNCTION ${schema}.notify_orchestrator(p_at BIGINT[], p_instances TEXT[])
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    -- The database clock, as the SQL API's writes use it: the writers these triggers serve are not providers.
    v_now    BIGINT := ${schema}.sql_api_now_ms();
    v_due_at BIGINT;
    v_due_n  BIGINT;
    v_first  BIGINT;
    v_n      BIGINT;
BEGIN
    SELECT max(m.at) FILTER (WHERE m.at <= v_now), count(DISTINCT m.instance) FILTER (WHERE m.at <= v_now),
           min(m.at)
      INTO v_due_at, v_due_n, v_first
      FROM unnest(p_at, p_instances) AS m(at, instance);
    IF v_due_n > 0 THEN
        PERFORM pg_notify('${channel}', 'o|' || v_due_at || '|' || v_due_n);
    ELSIF v_first IS NOT NULL THEN
        SELECT count(DISTINCT m.instance) INTO v_n FROM unnest(p_at, p_instances) AS m(at, instance)
         WHERE m.at = v_first;
        PERFORM pg_notify('${channel}', 'o|' || v_first || '|' || v_n);
    END IF;
END
$$;

-- One worker payload for the rows (p_at, p_tags, p_sessions) of one statement (at least one row): their earliest
-- time, how many (0 with p_lease_end: they come back when their leases end) and their routing.
CREATE FUNCTION ${schema}.notify_worker(p_at BIGINT[], p_tags TEXT[], p_sessions TEXT[], p_lease_end BOOLEAN)
RETURNS VOID
LANGUAGE sql AS $$
    SELECT pg_notify('${channel}', 'w|' || min(r.at) || '|' || CASE WHEN p_lease_end THEN 0 ELSE count(*) END
                     || '|' || bool_or(r.tag IS NULL)::INT || '|'
                     || ${schema}.notify_tag_field(
                            COALESCE(array_agg(DISTINCT r.tag) FILTER (WHERE r.tag IS NOT NULL), '{}'))
                     || '|' || bool_or(r.session IS NOT NULL)::INT)
      FROM unnest(p_at, p_tags, p_sessions) AS r(at, tag, session);
$$;

-- New orchestrator messages (enqueues, a turn's messages and timers, activity completions).
CREATE FUNCTION ${schema}.notify_orchestrator_insert()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.notify_orchestrator(array_agg(r.visible_at_ms), array_agg(r.instance_id)) FROM new_rows r
     HAVING count(*) > 0;
    RETURN NULL;
END
$$;

-- Messages released by an abandon (at once, or at the end of its delay). Claims only tag rows: no hint.
CREATE FUNCTION ${schema}.notify_orchestrator_update()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.notify_orchestrator(array_agg(n.visible_at_ms), array_agg(n.instance_id))
       FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.lock_token IS NULL AND (o.lock_token IS NOT NULL OR o.visible_at_ms <> n.visible_at_ms)
     HAVING count(*) > 0;
    RETURN NULL;
END
$$;

-- An orchestration lease was taken or renewed: every node learns when it ends, so a crashed owner's instance is
-- picked up at its expiry.
CREATE FUNCTION ${schema}.notify_instance_lease()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
BEGIN
    SELECT min(r.locked_until_ms) INTO v_at FROM new_rows r;
    IF v_at IS NOT NULL THEN
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|0');
    END IF;
    RETURN NULL;
END
$$;

-- An orchestration lease ended (ack, abandon): messages that arrived during the turn are claimable again.
CREATE FUNCTION ${schema}.notify_instance_release()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.notify_orchestrator(array_agg(q.visible_at_ms), array_agg(q.instance_id))
       FROM ${schema}.orchestrator_queue q
      WHERE q.instance_id IN (SELECT o.instance_id FROM old_rows o) AND q.lock_token IS NULL
     HAVING count(*) > 0;
    RETURN NULL;
END
$$;

CREATE FUNCTION ${schema}.notify_worker_insert()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.notify_worker(array_agg(r.visible_at_ms), array_agg(r.tag), array_agg(r.session_id), false)
       FROM new_rows r
     HAVING count(*) > 0;
    RETURN NULL;
END
$$;

-- One statement either releases items (abandon: claimable at their visibility time) or leases them (claim, renew:
-- claimable again when the lease ends, n = 0); a statement doing both names the released items.
CREATE FUNCTION ${schema}.notify_worker_update()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.notify_worker(array_agg(n.visible_at_ms), array_agg(n.tag), array_agg(n.session_id), false)
       FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.lock_token IS NULL AND (o.lock_token IS NOT NULL OR o.visible_at_ms <> n.visible_at_ms)
     HAVING count(*) > 0;
    IF NOT FOUND THEN
        PERFORM ${schema}.notify_worker(array_agg(n.locked_until_ms), array_agg(n.tag), array_agg(n.session_id),
                                        true)
           FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE n.lock_token IS NOT NULL AND n.locked_until_ms IS DISTINCT FROM o.locked_until_ms
         HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END
$$;

-- A session lease was taken: when it ends, the session's items become claimable by other owners.
CREATE FUNCTION ${schema}.notify_session_lease()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
BEGIN
    SELECT min(r.locked_until_ms) INTO v_at FROM new_rows r;
    IF v_at IS NOT NULL THEN
        PERFORM pg_notify('${channel}', 's|' || v_at);
    END IF;
    RETURN NULL;
END
$$;

-- A session lease was moved. Acks and renewals that only record activity leave its end alone: no hint.
CREATE FUNCTION ${schema}.notify_session_lease_update()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
BEGIN
    SELECT min(n.locked_until_ms) INTO v_at
      FROM new_rows n JOIN old_rows o ON o.session_id = n.session_id
     WHERE n.locked_until_ms IS DISTINCT FROM o.locked_until_ms;
    IF v_at IS NOT NULL THEN
        PERFORM pg_notify('${channel}', 's|' || v_at);
    END IF;
    RETURN NULL;
END
$$;

-- The WHEN clause skips a provider's announced writes before any trigger function runs.
CREATE TRIGGER pgdurable_notify_orchestrator_insert AFTER INSERT ON ${schema}.orchestrator_queue
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_orchestrator_insert();
CREATE TRIGGER pgdurable_notify_orchestrator_update AFTER UPDATE ON ${schema}.orchestrator_queue
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_orchestrator_update();
CREATE TRIGGER pgdurable_notify_instance_lease_insert AFTER INSERT ON ${schema}.instance_locks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_instance_lease();
CREATE TRIGGER pgdurable_notify_instance_lease_update AFTER UPDATE ON ${schema}.instance_locks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_instance_lease();
CREATE TRIGGER pgdurable_notify_instance_release AFTER DELETE ON ${schema}.instance_locks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_instance_release();
CREATE TRIGGER pgdurable_notify_worker_insert AFTER INSERT ON ${schema}.worker_queue
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_worker_insert();
CREATE TRIGGER pgdurable_notify_worker_update AFTER UPDATE ON ${schema}.worker_queue
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_worker_update();
CREATE TRIGGER pgdurable_notify_session_insert AFTER INSERT ON ${schema}.sessions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_session_lease();
CREATE TRIGGER pgdurable_notify_session_update AFTER UPDATE ON ${schema}.sessions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_session_lease_update();

-- Installed disabled: a schema starts deactivated (hub_settings 'long_polling' = 'off'), and activation enables
-- the triggers together with the setting.
ALTER TABLE ${schema}.orchestrator_queue DISABLE TRIGGER pgdurable_notify_orchestrator_insert;
ALTER TABLE ${schema}.orchestrator_queue DISABLE TRIGGER pgdurable_notify_orchestrator_update;
ALTER TABLE ${schema}.instance_locks DISABLE TRIGGER pgdurable_notify_instance_lease_insert;
ALTER TABLE ${schema}.instance_locks DISABLE TRIGGER pgdurable_notify_instance_lease_update;
ALTER TABLE ${schema}.instance_locks DISABLE TRIGGER pgdurable_notify_instance_release;
ALTER TABLE ${schema}.worker_queue DISABLE TRIGGER pgdurable_notify_worker_insert;
ALTER TABLE ${schema}.worker_queue DISABLE TRIGGER pgdurable_notify_worker_update;
ALTER TABLE ${schema}.sessions DISABLE TRIGGER pgdurable_notify_session_insert;
ALTER TABLE ${schema}.sessions DISABLE TRIGGER pgdurable_notify_session_update;


-- ======== SQL API ==================================================================================================

-- The SQL API: a documented, stable way for writers that are not a pgdurable provider (an application's own
-- triggers, services in other languages, an operator in psql) to put work into a task hub (docs/sql-api.md).
--
-- Compatibility promise. The five public functions, start_orchestration, raise_event, cancel_instance,
-- enqueue_activity and enqueue_work_item, keep their names, argument names and types, argument order and VOID
-- result in every later migration. A later migration may only add trailing arguments with defaults, and does so by
-- replacing the function (never by adding an overload, which would make existing calls ambiguous), so every call
-- written against this version keeps working. The functions prefixed sql_api_ are internal helpers and, like every
-- other function of the schema, may change in any migration.
--
-- Each public function returns VOID: the promise covers the effect (one row in one queue, committed or rolled back
-- with the caller's transaction) and nothing else. A queue row id would expose an internal that later versions may
-- change, and a result type can never be changed by a later migration without breaking callers.
--
-- Everything the provider reads back is built here with PostgreSQL's JSON builders, in the provider's own wire form
-- (externally tagged: {"Kind": {fields}}), so WorkItem.fromJson decodes exactly the values given. Payload texts
-- (input, data, reason, ...) are opaque strings, as in the Java API: they are stored as JSON strings, never parsed.
--
-- Privileges: the public functions run as their owner (SECURITY DEFINER, with a fixed search_path so a caller's
-- objects cannot stand in for built-ins), and EXECUTE is revoked from PUBLIC. A writer's role then needs USAGE on
-- the schema and EXECUTE on the functions it calls, and no privilege on the tables: the grants name only what this
-- promise keeps stable. A later migration that replaces a public function must carry its EXECUTE grants over
-- (dropping a function drops its grants).
--
-- Every refusal is SQLSTATE PD002 (invalid input; permanent for the provider's SqlErrors) with a message that names
-- the function and the argument, and happens before anything is written.
--
-- Times: the database clock (clock_timestamp()) in epoch milliseconds, where the provider uses the application
-- clock; the two must be in sync, as between provider nodes.

-- A row, not a constant, so an operator can change the limit without a migration. The default is the provider's
-- PostgresProviderConfig.DEFAULT_MAX_PAYLOAD_BYTES (4 MiB).
INSERT INTO ${schema}.hub_settings (name, value) VALUES ('sql_api_max_payload_bytes', '4194304');

-- The payload limit in bytes; a deleted row means the default, a malformed one fails every call until fixed.
CREATE FUNCTION ${schema}.sql_api_payload_limit(p_function TEXT)
RETURNS BIGINT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_value TEXT;
BEGIN
    SELECT btrim(s.value) INTO v_value FROM ${schema}.hub_settings s WHERE s.name = 'sql_api_max_payload_bytes';
    IF NOT FOUND THEN
        RETURN 4194304;
    END IF;
    -- Separate tests, not one OR: the planner may fold the cast of a constant before the pattern test guards it.
    IF v_value ~ '^[0-9]{1,18}$' THEN
        IF v_value::BIGINT > 0 THEN
            RETURN v_value::BIGINT;
        END IF;
    END IF;
    -- Not the caller's mistake, so not PD002: the hub is misconfigured.
    RAISE EXCEPTION '%: hub_settings row sql_api_max_payload_bytes must be a positive integer, is "%"',
        p_function, v_value USING ERRCODE = '22023';
END
$$;

CREATE FUNCTION ${schema}.sql_api_reject(p_function TEXT, p_problem TEXT)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%: %', p_function, p_problem USING ERRCODE = 'PD002';
END
$$;

-- One rule per kind of text argument:
--   'identifier'          required and non-empty (instance ids, orchestration, activity and event names)
--   'payload'             required, may be empty, at most the payload limit (opaque to the provider)
--   'optional identifier' NULL for absent, otherwise non-empty (version, session, tag): an empty one is a mistake
--                         (an empty tag, for one, matches no worker's tag filter)
--   'optional payload'    NULL for absent, otherwise any string (used by sql_api_field_text only)
CREATE FUNCTION ${schema}.sql_api_check_text(
    p_function TEXT, p_argument TEXT, p_value TEXT, p_rule TEXT, p_limit BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    IF p_rule = 'identifier' AND (p_value IS NULL OR p_value = '') THEN
        PERFORM ${schema}.sql_api_reject(p_function, p_argument || ' must not be NULL or empty');
    ELSIF p_rule = 'payload' AND p_value IS NULL THEN
        PERFORM ${schema}.sql_api_reject(p_function, p_argument || ' must not be NULL (an empty string is allowed)');
    ELSIF p_rule = 'payload' THEN
        PERFORM ${schema}.sql_api_check_size(p_function, p_argument, p_value, p_limit);
    ELSIF p_rule = 'optional identifier' AND p_value = '' THEN
        PERFORM ${schema}.sql_api_reject(p_function, p_argument || ' must be NULL (absent) or non-empty');
    END IF;
END
$$;

CREATE FUNCTION ${schema}.sql_api_check_size(p_function TEXT, p_what TEXT, p_value TEXT, p_limit BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_bytes BIGINT := octet_length(p_value);
BEGIN
    IF v_bytes > p_limit THEN
        PERFORM ${schema}.sql_api_reject(p_function, format(
            '%s is %s bytes, above the limit of %s bytes (hub_settings row sql_api_max_payload_bytes)',
            p_what, v_bytes, p_limit));
    END IF;
END
$$;

-- Execution and event ids start at 1 in the runtime, so 0 is refused along with negative ids.
CREATE FUNCTION ${schema}.sql_api_check_id(p_function TEXT, p_argument TEXT, p_value BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    IF p_value IS NULL THEN
        PERFORM ${schema}.sql_api_reject(p_function, p_argument || ' must not be NULL');
    ELSIF p_value < 1 THEN
        PERFORM ${schema}.sql_api_reject(p_function, format('%s must be at least 1 (ids start at 1), is %s',
            p_argument, p_value));
    END IF;
END
$$;

-- Truncated like Java's Clock.millis(), so an item enqueued now is never visible later than now.
CREATE FUNCTION ${schema}.sql_api_now_ms()
RETURNS BIGINT
LANGUAGE sql VOLATILE AS $$
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
$$;

CREATE FUNCTION ${schema}.sql_api_epoch_ms(p_function TEXT, p_argument TEXT, p_time TIMESTAMPTZ)
RETURNS BIGINT
LANGUAGE plpgsql AS $$
BEGIN
    IF p_time IS NULL THEN
        RETURN NULL;
    END IF;
    IF NOT isfinite(p_time) THEN
        PERFORM ${schema}.sql_api_reject(p_function, format('%s must be a finite time or NULL, is %s',
            p_argument, p_time));
    END IF;
    RETURN floor(extract(epoch FROM p_time) * 1000)::BIGINT;
END
$$;

-- The last check (the whole work item against the limit, as the provider checks its encoded item) and the write.
-- p_fields' NULL members are dropped: the wire form omits absent optional fields.
CREATE FUNCTION ${schema}.sql_api_store_orchestrator(
    p_function TEXT, p_kind TEXT, p_instance TEXT, p_fields JSON, p_visible_at_ms BIGINT, p_now BIGINT,
    p_limit BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_item TEXT := json_build_object(p_kind, json_strip_nulls(p_fields))::TEXT;
BEGIN
    PERFORM ${schema}.sql_api_check_size(p_function, 'the resulting work item', v_item, p_limit);
    INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
    VALUES (p_instance, p_kind, v_item, p_visible_at_ms, p_now);
END
$$;

-- The routing columns are filled exactly as enqueue_worker_item fills them: the fetch's tag filter and session
-- rules read the columns, never the JSON.
CREATE FUNCTION ${schema}.sql_api_store_activity(
    p_function TEXT, p_fields JSON, p_now BIGINT, p_limit BIGINT, p_instance TEXT, p_execution_id BIGINT,
    p_activity_id BIGINT, p_session TEXT, p_tag TEXT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_item TEXT := json_build_object('ActivityExecute', json_strip_nulls(p_fields))::TEXT;
BEGIN
    PERFORM ${schema}.sql_api_check_size(p_function, 'the resulting work item', v_item, p_limit);
    INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                        activity_id, session_id, tag)
    VALUES (v_item, p_now, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag);
END
$$;

-- ------------------------------------------------------------------------------------------------ public

CREATE FUNCTION ${schema}.start_orchestration(
    p_instance_id TEXT, p_orchestration TEXT, p_input TEXT, p_version TEXT DEFAULT NULL,
    p_start_at TIMESTAMPTZ DEFAULT NULL)
RETURNS VOID
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_fn    CONSTANT TEXT := 'start_orchestration';
    v_limit BIGINT := ${schema}.sql_api_payload_limit(c_fn);
    v_now   BIGINT := ${schema}.sql_api_now_ms();
BEGIN
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_instance_id', p_instance_id, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_orchestration', p_orchestration, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_input', p_input, 'payload', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_version', p_version, 'optional identifier', v_limit);
    PERFORM ${schema}.sql_api_store_orchestrator(c_fn, 'StartOrchestration', p_instance_id,
        json_build_object('instance', p_instance_id, 'orchestration', p_orchestration, 'input', p_input,
                          'version', p_version, 'execution_id', 1),
        -- A start time in the past means now; GREATEST ignores the NULL of "no start time".
        GREATEST(v_now, ${schema}.sql_api_epoch_ms(c_fn, 'p_start_at', p_start_at)), v_now, v_limit);
END
$$;

CREATE FUNCTION ${schema}.raise_event(p_instance_id TEXT, p_event_name TEXT, p_data TEXT)
RETURNS VOID
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_fn    CONSTANT TEXT := 'raise_event';
    v_limit BIGINT := ${schema}.sql_api_payload_limit(c_fn);
    v_now   BIGINT := ${schema}.sql_api_now_ms();
BEGIN
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_instance_id', p_instance_id, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_event_name', p_event_name, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_data', p_data, 'payload', v_limit);
    PERFORM ${schema}.sql_api_store_orchestrator(c_fn, 'ExternalRaised', p_instance_id,
        json_build_object('instance', p_instance_id, 'name', p_event_name, 'data', p_data), v_now, v_now, v_limit);
END
$$;

CREATE FUNCTION ${schema}.cancel_instance(p_instance_id TEXT, p_reason TEXT DEFAULT 'cancelled through the SQL API')
RETURNS VOID
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_fn    CONSTANT TEXT := 'cancel_instance';
    v_limit BIGINT := ${schema}.sql_api_payload_limit(c_fn);
    v_now   BIGINT := ${schema}.sql_api_now_ms();
BEGIN
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_instance_id', p_instance_id, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_reason', p_reason, 'payload', v_limit);
    PERFORM ${schema}.sql_api_store_orchestrator(c_fn, 'CancelInstance', p_instance_id,
        json_build_object('instance', p_instance_id, 'reason', p_reason), v_now, v_now, v_limit);
END
$$;

CREATE FUNCTION ${schema}.enqueue_activity(
    p_instance_id TEXT, p_execution_id BIGINT, p_activity_id BIGINT, p_name TEXT, p_input TEXT,
    p_session_id TEXT DEFAULT NULL, p_tag TEXT DEFAULT NULL)
RETURNS VOID
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_fn    CONSTANT TEXT := 'enqueue_activity';
    v_limit BIGINT := ${schema}.sql_api_payload_limit(c_fn);
    v_now   BIGINT := ${schema}.sql_api_now_ms();
BEGIN
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_instance_id', p_instance_id, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_id(c_fn, 'p_execution_id', p_execution_id);
    PERFORM ${schema}.sql_api_check_id(c_fn, 'p_activity_id', p_activity_id);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_name', p_name, 'identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_input', p_input, 'payload', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_session_id', p_session_id, 'optional identifier', v_limit);
    PERFORM ${schema}.sql_api_check_text(c_fn, 'p_tag', p_tag, 'optional identifier', v_limit);
    PERFORM ${schema}.sql_api_store_activity(c_fn,
        json_build_object('instance', p_instance_id, 'execution_id', p_execution_id, 'id', p_activity_id,
                          'name', p_name, 'input', p_input, 'session_id', p_session_id, 'tag', p_tag),
        v_now, v_limit, p_instance_id, p_execution_id, p_activity_id, p_session_id, p_tag);
END
$$;

-- ------------------------------------------------------------------------------------------------ generic form

-- A string field of a work item given as JSON, by the rules of sql_api_check_text (an absent field and a JSON
-- null are the same, as in WorkItemCodec.decode).
CREATE FUNCTION ${schema}.sql_api_field_text(p_fields JSONB, p_kind TEXT, p_field TEXT, p_rule TEXT)
RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_type TEXT := COALESCE(jsonb_typeof(p_fields -> p_field), 'null');
    v_text TEXT := p_fields ->> p_field;
BEGIN
    IF v_type = 'null' AND p_rule LIKE 'optional%' THEN
        RETURN NULL;
    END IF;
    IF v_type <> 'string' THEN
        PERFORM ${schema}.sql_api_reject('enqueue_work_item', format('p_work_item field %s.%s must be %s, got %s',
            p_kind, p_field,
            CASE p_rule WHEN 'identifier' THEN 'a non-empty string'
                        WHEN 'payload' THEN 'a string'
                        WHEN 'optional identifier' THEN 'a non-empty string or absent'
                        ELSE 'a string or absent' END,
            CASE WHEN p_fields -> p_field IS NULL THEN 'nothing (the field is missing)' ELSE 'a JSON ' || v_type END));
    END IF;
    IF v_text = '' AND p_rule IN ('identifier', 'optional identifier') THEN
        PERFORM ${schema}.sql_api_reject('enqueue_work_item', format('p_work_item field %s.%s must not be empty',
            p_kind, p_field));
    END IF;
    RETURN v_text;
END
$$;

-- An integer field, read from the JSON as written: the provider's decoder takes only integers written without
-- fraction or exponent (jsonb would turn 1e3 into 1000), within BIGINT. p_min: the smallest value accepted.
CREATE FUNCTION ${schema}.sql_api_field_integer(
    p_fields JSON, p_kind TEXT, p_field TEXT, p_required BOOLEAN, p_min BIGINT)
RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    v_value JSON := p_fields -> p_field;
    v_type  TEXT := COALESCE(json_typeof(v_value), 'null');
    v_text  TEXT := btrim(v_value::TEXT);
    v_ok    BOOLEAN;
BEGIN
    IF v_type = 'null' AND NOT p_required THEN
        RETURN NULL;
    END IF;
    v_ok := v_type = 'number' AND v_text ~ '^-?[0-9]+$';
    -- A separate test, not one AND: the planner may fold the cast of a constant before the pattern test guards it.
    IF v_ok THEN
        v_ok := v_text::NUMERIC BETWEEN -9223372036854775808 AND 9223372036854775807;
    END IF;
    IF NOT v_ok THEN
        PERFORM ${schema}.sql_api_reject('enqueue_work_item', format(
            'p_work_item field %s.%s must be an integer (no fraction or exponent, within BIGINT)%s, got %s',
            p_kind, p_field, CASE WHEN p_required THEN '' ELSE ' or absent' END,
            CASE WHEN v_value IS NULL THEN 'nothing (the field is missing)'
                 WHEN v_type = 'number' THEN left(v_text, 40)
                 ELSE 'a JSON ' || v_type END));
    END IF;
    IF v_text::BIGINT < p_min THEN
        PERFORM ${schema}.sql_api_reject('enqueue_work_item', format('p_work_item field %s.%s must be at least %s, is %s',
            p_kind, p_field, p_min, v_text));
    END IF;
    RETURN v_text::BIGINT;
END
$$;

-- ContinueAsNew.carry_forward_events: absent or null (none), or a list of [name, data] string pairs.
CREATE FUNCTION ${schema}.sql_api_field_carried_events(p_fields JSONB)
RETURNS JSON
LANGUAGE plpgsql AS $$
DECLARE
    v_list JSONB := p_fields -> 'carry_forward_events';
    v_pair JSONB;
    v_bad  TEXT := 'p_work_item field ContinueAsNew.carry_forward_events must be a list of [name, data] string pairs';
BEGIN
    IF v_list IS NULL OR jsonb_typeof(v_list) = 'null' THEN
        RETURN '[]'::JSON;
    END IF;
    IF jsonb_typeof(v_list) <> 'array' THEN
        PERFORM ${schema}.sql_api_reject('enqueue_work_item', v_bad || ', got a JSON ' || jsonb_typeof(v_list));
    END IF;
    FOR v_pair IN SELECT e FROM jsonb_array_elements(v_list) AS e LOOP
        IF jsonb_typeof(v_pair) <> 'array' THEN
            PERFORM ${schema}.sql_api_reject('enqueue_work_item', v_bad || ', got an element ' || v_pair::TEXT);
        END IF;
        IF jsonb_array_length(v_pair) <> 2 OR jsonb_typeof(v_pair -> 0) <> 'string'
           OR jsonb_typeof(v_pair -> 1) <> 'string' THEN
            PERFORM ${schema}.sql_api_reject('enqueue_work_item', v_bad || ', got an element ' || left(v_pair::TEXT, 80));
        END IF;
        IF v_pair ->> 0 = '' THEN
            PERFORM ${schema}.sql_api_reject('enqueue_work_item', v_bad || ' with non-empty names');
        END IF;
    END LOOP;
    RETURN v_list::JSON;
END
$$;

-- Accepts what the provider's decoder (WorkItemCodec.decode) accepts, with the SQL API's rules on top (non-empty
-- names and optional identifiers, ids from 1), and stores the item re-encoded from the validated fields: fields the
-- decoder would ignore are dropped, and the stored text is the provider's wire form whatever the caller's spacing,
-- escapes or duplicate keys (the last of duplicates counts, as in the decoder).
CREATE FUNCTION ${schema}.enqueue_work_item(p_work_item TEXT, p_visible_at TIMESTAMPTZ DEFAULT NULL)
RETURNS VOID
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_fn       CONSTANT TEXT := 'enqueue_work_item';
    v_limit    BIGINT := ${schema}.sql_api_payload_limit(c_fn);
    v_now      BIGINT := ${schema}.sql_api_now_ms();
    v_doc      JSONB;
    v_raw      JSON;
    v_keys     TEXT[];
    v_kind     TEXT;
    v_f        JSONB;
    v_n        JSON;
    v_fields   JSON;
    v_instance TEXT;
    v_exec     BIGINT;
    v_id       BIGINT;
    v_session  TEXT;
    v_tag      TEXT;
    v_fire_at  BIGINT;
    v_visible  BIGINT;
    v_state    TEXT;
    v_message  TEXT;
    v_detail   TEXT;
BEGIN
    IF p_work_item IS NULL THEN
        PERFORM ${schema}.sql_api_reject(c_fn, 'p_work_item must not be NULL');
    END IF;
    -- Size first: a text over the limit is refused without being parsed.
    PERFORM ${schema}.sql_api_check_size(c_fn, 'p_work_item', p_work_item, v_limit);
    -- The block writes nothing, so its subtransaction never takes a transaction id: a trigger calling this for
    -- every row of a large statement does not overflow the subtransaction cache.
    BEGIN
        v_doc := p_work_item::JSONB;
        v_raw := p_work_item::JSON;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT,
                                v_detail = PG_EXCEPTION_DETAIL;
        PERFORM ${schema}.sql_api_reject(c_fn, CASE WHEN v_state LIKE '54%' THEN 'p_work_item nests too deeply: '
                                                    ELSE 'p_work_item is not valid JSON: ' END
            || v_message || COALESCE(' (' || NULLIF(v_detail, '') || ')', ''));
    END;

    IF jsonb_typeof(v_doc) <> 'object' THEN
        PERFORM ${schema}.sql_api_reject(c_fn, 'p_work_item must be a JSON object {"<kind>": {<fields>}}, got a JSON '
            || jsonb_typeof(v_doc));
    END IF;
    v_keys := ARRAY(SELECT k FROM jsonb_object_keys(v_doc) AS k);
    IF cardinality(v_keys) <> 1 THEN
        PERFORM ${schema}.sql_api_reject(c_fn, format(
            'p_work_item must have exactly one key, the kind of work item, got %s',
            CASE WHEN cardinality(v_keys) = 0 THEN 'none'
                 ELSE cardinality(v_keys) || ': ' || left(array_to_string(v_keys, ', '), 200) END));
    END IF;
    v_kind := v_keys[1];
    IF v_kind NOT IN ('StartOrchestration', 'ContinueAsNew', 'ActivityExecute', 'ActivityCompleted',
                      'ActivityFailed', 'TimerFired', 'ExternalRaised', 'QueueMessage', 'SubOrchCompleted',
                      'SubOrchFailed', 'CancelInstance') THEN
        PERFORM ${schema}.sql_api_reject(c_fn, format('p_work_item has unknown kind %s; the kinds are '
            || 'StartOrchestration, ContinueAsNew, ActivityExecute, ActivityCompleted, ActivityFailed, TimerFired, '
            || 'ExternalRaised, QueueMessage, SubOrchCompleted, SubOrchFailed, CancelInstance', left(to_json(v_kind)::TEXT, 80)));
    END IF;
    v_f := v_doc -> v_kind;
    v_n := v_raw -> v_kind;
    IF jsonb_typeof(v_f) <> 'object' THEN
        PERFORM ${schema}.sql_api_reject(c_fn, format('p_work_item kind %s must hold an object of fields, got a JSON %s',
            v_kind, jsonb_typeof(v_f)));
    END IF;
    IF v_kind = 'ActivityExecute' AND p_visible_at IS NOT NULL THEN
        -- The worker queue has no delayed visibility in the provider's API either (enqueueForWorker).
        PERFORM ${schema}.sql_api_reject(c_fn, 'p_visible_at must be NULL for an ActivityExecute: activities are '
            || 'visible at once');
    END IF;

    CASE v_kind
    WHEN 'StartOrchestration' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        v_fields := json_build_object(
            'instance', v_instance,
            'orchestration', ${schema}.sql_api_field_text(v_f, v_kind, 'orchestration', 'identifier'),
            'input', ${schema}.sql_api_field_text(v_f, v_kind, 'input', 'payload'),
            'version', ${schema}.sql_api_field_text(v_f, v_kind, 'version', 'optional identifier'),
            'parent_instance', ${schema}.sql_api_field_text(v_f, v_kind, 'parent_instance', 'optional identifier'),
            'parent_id', ${schema}.sql_api_field_integer(v_n, v_kind, 'parent_id', FALSE, 1),
            'execution_id', COALESCE(${schema}.sql_api_field_integer(v_n, v_kind, 'execution_id', FALSE, 1), 1));
    WHEN 'ContinueAsNew' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        v_fields := json_build_object(
            'instance', v_instance,
            'orchestration', ${schema}.sql_api_field_text(v_f, v_kind, 'orchestration', 'identifier'),
            'input', ${schema}.sql_api_field_text(v_f, v_kind, 'input', 'payload'),
            'version', ${schema}.sql_api_field_text(v_f, v_kind, 'version', 'optional identifier'),
            'carry_forward_events', ${schema}.sql_api_field_carried_events(v_f),
            -- A custom status is a payload: empty is a value.
            'initial_custom_status', ${schema}.sql_api_field_text(v_f, v_kind, 'initial_custom_status',
                                                                  'optional payload'));
    WHEN 'ActivityExecute' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        v_exec := ${schema}.sql_api_field_integer(v_n, v_kind, 'execution_id', TRUE, 1);
        v_id := ${schema}.sql_api_field_integer(v_n, v_kind, 'id', TRUE, 1);
        v_session := ${schema}.sql_api_field_text(v_f, v_kind, 'session_id', 'optional identifier');
        v_tag := ${schema}.sql_api_field_text(v_f, v_kind, 'tag', 'optional identifier');
        v_fields := json_build_object(
            'instance', v_instance, 'execution_id', v_exec, 'id', v_id,
            'name', ${schema}.sql_api_field_text(v_f, v_kind, 'name', 'identifier'),
            'input', ${schema}.sql_api_field_text(v_f, v_kind, 'input', 'payload'),
            'session_id', v_session, 'tag', v_tag);
    WHEN 'ActivityCompleted', 'ActivityFailed' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        v_fields := json_build_object(
            'instance', v_instance,
            'execution_id', ${schema}.sql_api_field_integer(v_n, v_kind, 'execution_id', TRUE, 1),
            'id', ${schema}.sql_api_field_integer(v_n, v_kind, 'id', TRUE, 1),
            CASE v_kind WHEN 'ActivityCompleted' THEN 'result' ELSE 'details' END,
            ${schema}.sql_api_field_text(v_f, v_kind,
                CASE v_kind WHEN 'ActivityCompleted' THEN 'result' ELSE 'details' END, 'payload'));
    WHEN 'TimerFired' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        -- 0 is allowed: the provider reads a fire time of 0 as "none" (visible at p_visible_at or now).
        v_fire_at := ${schema}.sql_api_field_integer(v_n, v_kind, 'fire_at_ms', TRUE, 0);
        v_fields := json_build_object(
            'instance', v_instance,
            'execution_id', ${schema}.sql_api_field_integer(v_n, v_kind, 'execution_id', TRUE, 1),
            'id', ${schema}.sql_api_field_integer(v_n, v_kind, 'id', TRUE, 1),
            'fire_at_ms', v_fire_at);
    WHEN 'ExternalRaised', 'QueueMessage' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        v_fields := json_build_object(
            'instance', v_instance,
            'name', ${schema}.sql_api_field_text(v_f, v_kind, 'name', 'identifier'),
            'data', ${schema}.sql_api_field_text(v_f, v_kind, 'data', 'payload'));
    WHEN 'SubOrchCompleted', 'SubOrchFailed' THEN
        -- A sub-orchestration's result goes to its parent's queue.
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'parent_instance', 'identifier');
        v_fields := json_build_object(
            'parent_instance', v_instance,
            'parent_execution_id', ${schema}.sql_api_field_integer(v_n, v_kind, 'parent_execution_id', TRUE, 1),
            'parent_id', ${schema}.sql_api_field_integer(v_n, v_kind, 'parent_id', TRUE, 1),
            CASE v_kind WHEN 'SubOrchCompleted' THEN 'result' ELSE 'details' END,
            ${schema}.sql_api_field_text(v_f, v_kind,
                CASE v_kind WHEN 'SubOrchCompleted' THEN 'result' ELSE 'details' END, 'payload'));
    WHEN 'CancelInstance' THEN
        v_instance := ${schema}.sql_api_field_text(v_f, v_kind, 'instance', 'identifier');
        v_fields := json_build_object(
            'instance', v_instance,
            'reason', ${schema}.sql_api_field_text(v_f, v_kind, 'reason', 'payload'));
    END CASE;

    IF v_kind = 'ActivityExecute' THEN
        PERFORM ${schema}.sql_api_store_activity(c_fn, v_fields, v_now, v_limit, v_instance, v_exec, v_id,
                                                 v_session, v_tag);
    ELSE
        v_visible := GREATEST(v_now, ${schema}.sql_api_epoch_ms(c_fn, 'p_visible_at', p_visible_at));
        -- As enqueueForOrchestrator: a timer is never visible before its fire time.
        IF v_fire_at > 0 THEN
            v_visible := GREATEST(v_visible, v_fire_at);
        END IF;
        PERFORM ${schema}.sql_api_store_orchestrator(c_fn, v_kind, v_instance, v_fields, v_visible, v_now, v_limit);
    END IF;
END
$$;

COMMENT ON FUNCTION ${schema}.start_orchestration(TEXT, TEXT, TEXT, TEXT, TIMESTAMPTZ) IS
    'pgdurable SQL API (stable, docs/sql-api.md): enqueue a StartOrchestration (execution 1), visible at p_start_at or now';
COMMENT ON FUNCTION ${schema}.raise_event(TEXT, TEXT, TEXT) IS
    'pgdurable SQL API (stable, docs/sql-api.md): enqueue an ExternalRaised event for an instance';
COMMENT ON FUNCTION ${schema}.cancel_instance(TEXT, TEXT) IS
    'pgdurable SQL API (stable, docs/sql-api.md): enqueue a CancelInstance for an instance';
COMMENT ON FUNCTION ${schema}.enqueue_activity(TEXT, BIGINT, BIGINT, TEXT, TEXT, TEXT, TEXT) IS
    'pgdurable SQL API (stable, docs/sql-api.md): enqueue an ActivityExecute on the worker queue';
COMMENT ON FUNCTION ${schema}.enqueue_work_item(TEXT, TIMESTAMPTZ) IS
    'pgdurable SQL API (stable, docs/sql-api.md): enqueue any work item given in the provider''s JSON wire form';

REVOKE EXECUTE ON FUNCTION
    ${schema}.start_orchestration(TEXT, TEXT, TEXT, TEXT, TIMESTAMPTZ),
    ${schema}.raise_event(TEXT, TEXT, TEXT),
    ${schema}.cancel_instance(TEXT, TEXT),
    ${schema}.enqueue_activity(TEXT, BIGINT, BIGINT, TEXT, TEXT, TEXT, TEXT),
    ${schema}.enqueue_work_item(TEXT, TIMESTAMPTZ)
    FROM PUBLIC;
