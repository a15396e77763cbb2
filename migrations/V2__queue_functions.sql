-- The hot path: one function call = one round trip = one transaction per operation.
-- Errors the provider must classify carry SQLSTATEs of class PD (all permanent):
--   PD001 lock token unknown, expired or already used     PD002 invalid input
--   PD003 instance not found                             PD004 instance still running
-- p_now is the application clock in epoch milliseconds.

-- Lock one instance with visible messages, tag its visible messages, return them with the current history.
-- Losing a race for a candidate moves on to the next one; the result is empty only when nothing is eligible.
CREATE FUNCTION ${schema}.fetch_orchestration_item(
    p_now BIGINT, p_lock_ms BIGINT, p_token TEXT, p_min_version BIGINT, p_max_version BIGINT)
RETURNS TABLE (
    instance_id TEXT, orchestration_name TEXT, orchestration_version TEXT, execution_id BIGINT,
    has_instance BOOLEAN, attempt_count INT, messages TEXT[], event_ids BIGINT[], event_types TEXT[],
    event_data TEXT[], kv_keys TEXT[], kv_values TEXT[], kv_updated_ms BIGINT[])
LANGUAGE plpgsql AS $$
DECLARE
    v_instance TEXT;
    v_skipped  TEXT[] := '{}';
    v_name     TEXT;
    v_version  TEXT;
    v_exec     BIGINT;
    v_has_inst BOOLEAN;
    v_dropped  INT;
    v_attempts INT;
    v_messages TEXT[];
BEGIN
    FOR v_round IN 1..64 LOOP
        SELECT q.instance_id INTO v_instance
          FROM ${schema}.orchestrator_queue q
         WHERE q.visible_at_ms <= p_now
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

        -- Another fetcher is working on this candidate right now: move on instead of queueing behind it.
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(hashtext('${schema}'), hashtext(v_instance));

        INSERT INTO ${schema}.instance_locks AS l (instance_id, lock_token, locked_until_ms, locked_at_ms)
        VALUES (v_instance, p_token, p_now + p_lock_ms, p_now)
        ON CONFLICT ON CONSTRAINT instance_locks_pkey DO UPDATE
           SET lock_token = EXCLUDED.lock_token, locked_until_ms = EXCLUDED.locked_until_ms,
               locked_at_ms = EXCLUDED.locked_at_ms
         WHERE l.locked_until_ms <= p_now;
        CONTINUE WHEN NOT FOUND;

        SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id
          INTO v_name, v_version, v_exec
          FROM ${schema}.instances i WHERE i.instance_id = v_instance;
        v_has_inst := FOUND;

        IF NOT v_has_inst
           AND NOT EXISTS (SELECT 1 FROM ${schema}.history h WHERE h.instance_id = v_instance)
           AND NOT EXISTS (SELECT 1 FROM ${schema}.orchestrator_queue q
                            WHERE q.instance_id = v_instance AND q.visible_at_ms <= p_now
                              AND q.kind IN ('StartOrchestration', 'ContinueAsNew')) THEN
            -- Nothing can start this instance yet. Persistent events sent before it exists would loop forever:
            -- drop them. Anything else (a cancel racing a start) waits for its start message.
            IF NOT EXISTS (SELECT 1 FROM ${schema}.orchestrator_queue q
                            WHERE q.instance_id = v_instance AND q.kind <> 'QueueMessage') THEN
                DELETE FROM ${schema}.orchestrator_queue q
                 WHERE q.instance_id = v_instance AND q.visible_at_ms <= p_now;
                GET DIAGNOSTICS v_dropped = ROW_COUNT;
                IF v_dropped > 0 THEN
                    RAISE WARNING 'pgdurable: dropped % orphan QueueMessage(s) for never-started instance %',
                        v_dropped, v_instance;
                END IF;
            END IF;
            DELETE FROM ${schema}.instance_locks l WHERE l.instance_id = v_instance AND l.lock_token = p_token;
            CONTINUE;
        END IF;

        WITH tagged AS (
            UPDATE ${schema}.orchestrator_queue q
               SET lock_token = p_token, locked_until_ms = p_now + p_lock_ms, attempt_count = q.attempt_count + 1
             WHERE q.instance_id = v_instance AND q.visible_at_ms <= p_now
               AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)
            RETURNING q.id, q.work_item, q.attempt_count)
        SELECT array_agg(t.work_item ORDER BY t.id), max(t.attempt_count) INTO v_messages, v_attempts FROM tagged t;

        IF v_messages IS NULL THEN
            -- The messages were consumed between the candidate search and the lock.
            DELETE FROM ${schema}.instance_locks l WHERE l.instance_id = v_instance AND l.lock_token = p_token;
            CONTINUE;
        END IF;

        instance_id := v_instance;
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
         WHERE h.instance_id = v_instance AND h.execution_id = COALESCE(v_exec, 1);
        SELECT array_agg(k.key ORDER BY k.key), array_agg(k.value ORDER BY k.key),
               array_agg(k.last_updated_at_ms ORDER BY k.key)
          INTO kv_keys, kv_values, kv_updated_ms
          FROM ${schema}.kv_store k WHERE k.instance_id = v_instance;
        RETURN NEXT;
        RETURN;
    END LOOP;
END
$$;

-- Commit one turn. Arrays are parallel columns of the history delta, the new items and the KV mutations.
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

-- KV mutations of one turn, in delta order, into the current execution's delta table.
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

CREATE FUNCTION ${schema}.enqueue_worker_item(
    p_item TEXT, p_now BIGINT, p_instance TEXT, p_execution_id BIGINT, p_activity_id BIGINT,
    p_session TEXT, p_tag TEXT)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                        activity_id, session_id, tag)
    VALUES (p_item, p_now, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag);
$$;

-- Lease one activity. p_tag_mode: 0 untagged only, 1 listed tags, 2 untagged or listed, 3 any.
-- p_owner NULL: only items without a session. Otherwise also items whose session this owner holds or nobody holds
-- (no row or an expired lease); claiming such an item takes or refreshes the session lease.
CREATE FUNCTION ${schema}.fetch_work_item(
    p_now BIGINT, p_lock_ms BIGINT, p_token TEXT, p_owner TEXT, p_session_lock_ms BIGINT,
    p_tag_mode INT, p_tags TEXT[])
RETURNS TABLE (work_item TEXT, attempt_count INT)
LANGUAGE plpgsql AS $$
DECLARE
    v_id       BIGINT;
    v_session  TEXT;
    v_lost     TEXT[] := '{}';
BEGIN
    FOR v_round IN 1..64 LOOP
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

-- Finish a leased activity; the completion (if any) goes to its orchestration's queue in the same transaction.
CREATE FUNCTION ${schema}.ack_work_item(
    p_token TEXT, p_now BIGINT, p_instance TEXT, p_kind TEXT, p_completion TEXT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_session TEXT;
BEGIN
    DELETE FROM ${schema}.worker_queue w WHERE w.lock_token = p_token AND w.locked_until_ms > p_now
    RETURNING w.session_id INTO v_session;
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

CREATE FUNCTION ${schema}.renew_work_item_lock(p_token TEXT, p_now BIGINT, p_extend_ms BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_session TEXT;
BEGIN
    UPDATE ${schema}.worker_queue w SET locked_until_ms = p_now + p_extend_ms
     WHERE w.lock_token = p_token AND w.locked_until_ms > p_now
    RETURNING w.session_id INTO v_session;
    IF NOT FOUND THEN
        PERFORM ${schema}.raise_worker_token_error(p_token, p_now);
    END IF;
    IF v_session IS NOT NULL THEN
        UPDATE ${schema}.sessions s SET last_activity_at_ms = p_now
         WHERE s.session_id = v_session AND s.locked_until_ms > p_now;
    END IF;
END
$$;

CREATE FUNCTION ${schema}.abandon_work_item(p_token TEXT, p_now BIGINT, p_delay_ms BIGINT, p_ignore_attempt BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ${schema}.worker_queue w
       SET lock_token = NULL, locked_until_ms = NULL,
           visible_at_ms = p_now + GREATEST(COALESCE(p_delay_ms, 0), 0),
           attempt_count = CASE WHEN p_ignore_attempt THEN GREATEST(0, w.attempt_count - 1) ELSE w.attempt_count END
     WHERE w.lock_token = p_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: no worker item holds it (unknown, acked or cancelled)'
            USING ERRCODE = 'PD001';
    END IF;
END
$$;

-- Says precisely why a worker token no longer works.
CREATE FUNCTION ${schema}.raise_worker_token_error(p_token TEXT, p_now BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_until BIGINT;
BEGIN
    SELECT w.locked_until_ms INTO v_until FROM ${schema}.worker_queue w WHERE w.lock_token = p_token;
    IF FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: the work item lease expired % ms ago', p_now - v_until
            USING ERRCODE = 'PD001';
    END IF;
    RAISE EXCEPTION 'Invalid lock token: worker queue item not found (unknown token, already acked, or cancelled)'
        USING ERRCODE = 'PD001';
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
