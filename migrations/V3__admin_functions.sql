-- Management (cold path). Bulk operations are composed by the provider from these per-tree / per-instance calls,
-- so each transaction stays bounded.

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

-- Deletes the given instances and everything they own, in one transaction, or nothing.
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
