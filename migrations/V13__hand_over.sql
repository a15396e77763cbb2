-- Hand-over (issue 12, docs/long-polling.md "Hand-over"): a worker item written by a provider while one of that
-- provider's own fetches is parked for it is written already leased to that fetch, in the write's own transaction,
-- and handed over after the commit; the fetch returns it without a claim. The lease is exactly what the fetch's
-- claim would have taken: its token, its lock time from the write's time, attempt 1.
--
-- The released functions are unchanged: these are new ones beside them, so nodes of earlier versions keep working.

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
