-- Wake-up hints move out of the data transactions. A NOTIFY inside a transaction takes a database-wide lock at
-- commit and keeps it until the commit record is flushed, so every notifying transaction of the database waits for
-- the previous one's disk flush: measured here, enqueue throughput with the V4 triggers active fell to 0.40x of the
-- same enqueues without them (docs/benchmarks.md). Providers now announce what they committed themselves, after the
-- commit, in a separate short transaction that writes nothing to disk (docs/long-polling.md, "Announcements").
--
-- What stays here: whether the schema is activated (all providers announce their writes), now a setting instead of
-- the triggers' enabled state, and one function whose result the announcement of a turn needs.

CREATE TABLE ${schema}.hub_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

INSERT INTO ${schema}.hub_settings (name, value)
SELECT 'long_polling', CASE WHEN s.total > 0 AND s.enabled = s.total THEN 'on' ELSE 'off' END
  FROM ${schema}.notify_trigger_state() s;

DROP TRIGGER pgdurable_notify_orchestrator_insert ON ${schema}.orchestrator_queue;
DROP TRIGGER pgdurable_notify_orchestrator_update ON ${schema}.orchestrator_queue;
DROP TRIGGER pgdurable_notify_instance_lease_insert ON ${schema}.instance_locks;
DROP TRIGGER pgdurable_notify_instance_lease_update ON ${schema}.instance_locks;
DROP TRIGGER pgdurable_notify_instance_release ON ${schema}.instance_locks;
DROP TRIGGER pgdurable_notify_worker_insert ON ${schema}.worker_queue;
DROP TRIGGER pgdurable_notify_worker_update ON ${schema}.worker_queue;
DROP TRIGGER pgdurable_notify_session_insert ON ${schema}.sessions;
DROP TRIGGER pgdurable_notify_session_update ON ${schema}.sessions;

DROP FUNCTION ${schema}.notify_orchestrator_insert();
DROP FUNCTION ${schema}.notify_orchestrator_update();
DROP FUNCTION ${schema}.notify_instance_lease();
DROP FUNCTION ${schema}.notify_instance_release();
DROP FUNCTION ${schema}.notify_worker_insert();
DROP FUNCTION ${schema}.notify_worker_update();
DROP FUNCTION ${schema}.notify_session_lease();
DROP FUNCTION ${schema}.tag_hint(TEXT[]);
DROP FUNCTION ${schema}.notify_trigger_state();
DROP FUNCTION ${schema}.set_notify_triggers(BOOLEAN);

CREATE FUNCTION ${schema}.long_polling_activated()
RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT s.value = 'on' FROM ${schema}.hub_settings s WHERE s.name = 'long_polling'), FALSE);
$$;

CREATE FUNCTION ${schema}.set_long_polling(p_enabled BOOLEAN)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.hub_settings (name, value)
    VALUES ('long_polling', CASE WHEN p_enabled THEN 'on' ELSE 'off' END)
    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value;
$$;

-- ack_orchestration_item, plus what only the database knows after the lock is released: the earliest visibility
-- time of the instance's messages that arrived during the turn (NULL when none did), so the acking provider can
-- announce that the instance is claimable again.
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
