-- The orchestrator claim with generic plans (issue 12, docs/benchmarks.md "The orchestrator claim's planning").
--
-- fetch_orchestration_item and claim_orchestration_instance ran under the default plan cache mode, and their
-- statements kept custom plans: planned afresh, with the call's values, on every call. Measured on this machine in one
-- session, three schemas side by side (V18 as it was; V14's code with generic plans; a two-statement rewrite of the
-- claim with generic plans), 2,000 timer-like claims each, three runs: the generic plans took the fetch from
-- 0.68-1.02 ms to 0.55-0.84 ms at the median, and the rewrite was no faster than V14's code with generic plans. So the
-- code stays V14's and only the planning changes.
--
-- A generic plan does not know that visible_at_ms <= p_now matches nearly every row of an instance: planned on a small
-- queue it combined the instance index with the visible-at index (a BitmapAnd), which on a deep queue reads the whole
-- visible-at index to claim one instance. The statements that look up one instance's messages therefore compare
-- visible_at_ms + 0, which no index serves, so they always go through the instance index. The candidate search keeps
-- the plain comparison: there the visible-at index is the right one.
--
-- Why not one statement (a single CTE from candidate to history, tried in a probe before this): a statement reads under
-- the snapshot it started with, and an ack that commits while the lock upsert waits on its row would then be missing
-- from the history read in the same statement. The history is read by a statement that starts after the instance lock
-- is held, as before.
--
-- Signatures and results are unchanged; nodes of earlier versions work against this schema as before.

CREATE OR REPLACE FUNCTION ${schema}.claim_orchestration_instance(
    p_instance TEXT, p_now BIGINT, p_lock_ms BIGINT, p_token TEXT, p_min_version BIGINT, p_max_version BIGINT,
    p_drop_orphans BOOLEAN)
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
                        WHERE q.instance_id = p_instance AND q.visible_at_ms + 0 <= p_now
                          AND q.kind IN ('StartOrchestration', 'ContinueAsNew')) THEN
        -- Nothing can start this instance yet. Persistent events sent before it exists would loop forever: drop
        -- them. Anything else (a cancel racing a start) waits for its start message.
        IF p_drop_orphans AND NOT EXISTS (SELECT 1 FROM ${schema}.orchestrator_queue q
                                           WHERE q.instance_id = p_instance AND q.kind <> 'QueueMessage') THEN
            DELETE FROM ${schema}.orchestrator_queue q
             WHERE q.instance_id = p_instance AND q.visible_at_ms + 0 <= p_now;
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
         WHERE q.instance_id = p_instance AND q.visible_at_ms + 0 <= p_now
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

-- Its candidate search is served by the visible-at index whatever the values, and its claims run inside
-- claim_orchestration_instance above.
ALTER FUNCTION ${schema}.fetch_orchestration_item(BIGINT, BIGINT, TEXT, BIGINT, BIGINT)
    SET plan_cache_mode = force_generic_plan;
