-- Claims ahead of a visibility time (issue 12, docs/long-polling.md "Timers claimed ahead").
--
-- A deadline fires timerLead before the visibility time it stands for, and the fetch it wakes used to wait for that
-- time and then claim: the claim's round trip (1.4-1.6 ms at the median on this machine, a connection that sat idle
-- as long as the fetch was parked) was most of a timer's lateness. The fetch now claims at once, asking for what
-- is visible by that time, and returns what it claimed no earlier than that time.
--
-- Only visibility is judged by p_visible_by. Leases are judged by p_now, the claim's own clock, as before: a lease
-- that ends between the claim and p_visible_by is not taken early (its holder's ack must still succeed until its
-- lease ends), and the lease this claim takes starts at p_now.
--
-- Both functions are new overloads with p_visible_by after p_now; with p_visible_by = p_now they do exactly what the
-- old ones do, which stay unchanged for nodes of earlier versions (and for the hand-over's claiming writes, which
-- claim what is visible now).

-- claim_orchestration_instance of V19, visibility judged at p_visible_by.
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

-- fetch_orchestration_item of V14 (with V19's planning), candidates visible by p_visible_by.
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
