-- Wake-ups from every writer. Since V7 only a pgdurable provider could wake a parked fetch (it announces its own
-- commits); an application's trigger, a service in another language, an operator's psql session or a node of an
-- older release left its work to the one-second fallback probe. The design's notify triggers come back for them,
-- beside the announcer, installed DISABLED: activation (`pgdurable activate`, or a provider built with APPLY_ALL
-- and long polling) enables them together with the activation setting, `activate --off` disables both.
--
-- A provider's own writes do not pay for them: the provider wraps the time argument of every write in
-- provider_write(...), which marks its transaction (transaction-local settings, so it holds behind a
-- transaction-pooling proxy), and the triggers' WHEN clause skips marked statements; the provider announces those
-- writes after the commit as before. A provider configured with transactionalNotify marks its writes with its
-- origin only: the triggers then notify from inside its transactions too (no crash window, no group commit), and
-- the origin lets the writing provider ignore the echo of what it already routed locally.
--
-- One NOTIFY per statement and queue, never one per row, nothing when no row qualifies; payloads are the ones the
-- listener already reads (docs/long-polling.md), optionally followed by |origin:
--   o|<at_ms>|<n>                   n instances claimable from at_ms (n = 0: a lease ends at at_ms)
--   w|<at_ms>|<n>|<u>|<tags>|<s>    worker: u = 1 untagged items, tags comma-separated or '*', s = 1 session items
--   s|<at_ms>                       a session lease ends at at_ms
-- A statement whose orchestrator rows have several visibility times names the earliest; the later ones (a
-- transactionalNotify turn that schedules timers) reach other processes through a timer scan or the fallback probe,
-- while the writing provider routes all of them itself.

CREATE FUNCTION ${schema}.provider_write(p_now BIGINT, p_origin TEXT, p_announced BOOLEAN)
RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('pgdurable.announced', CASE WHEN p_announced THEN '${schema_name}' ELSE '' END, true),
            set_config('pgdurable.origin', COALESCE(p_origin, ''), true);
    RETURN p_now;
END
$$;

-- The same mark for the batched ack, whose time argument is one time per item.
CREATE FUNCTION ${schema}.provider_write(p_nows BIGINT[], p_origin TEXT, p_announced BOOLEAN)
RETURNS BIGINT[]
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM ${schema}.provider_write(0::BIGINT, p_origin, p_announced);
    RETURN p_nows;
END
$$;

-- '|<origin>' when a provider wrote this transaction (its own listener ignores the echo), '' otherwise.
CREATE FUNCTION ${schema}.notify_origin()
RETURNS TEXT
LANGUAGE sql STABLE AS $$
    SELECT COALESCE('|' || NULLIF(current_setting('pgdurable.origin', true), ''), '');
$$;

-- The tag field of a worker payload: the listener routes by it, so a tag it could misread becomes "any tag".
CREATE FUNCTION ${schema}.notify_tag_field(p_tags TEXT[])
RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN cardinality(p_tags) = 0 THEN ''
                WHEN cardinality(p_tags) > 5
                  OR EXISTS (SELECT 1 FROM unnest(p_tags) t WHERE t ~ '[|,]' OR length(t) > 64) THEN '*'
                ELSE array_to_string(p_tags, ',') END;
$$;

CREATE FUNCTION ${schema}.notify_worker(p_at BIGINT, p_n BIGINT, p_untagged BOOLEAN, p_tags TEXT[],
                                        p_sessions BOOLEAN)
RETURNS VOID
LANGUAGE sql AS $$
    SELECT pg_notify('${channel}', 'w|' || p_at || '|' || p_n || '|' || p_untagged::INT || '|'
                     || ${schema}.notify_tag_field(p_tags) || '|' || p_sessions::INT || ${schema}.notify_origin());
$$;

-- New orchestrator messages (enqueues, a turn's messages and timers, activity completions).
CREATE FUNCTION ${schema}.notify_orchestrator_insert()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
    v_n  BIGINT;
BEGIN
    SELECT min(r.visible_at_ms) INTO v_at FROM new_rows r;
    IF v_at IS NOT NULL THEN
        SELECT count(DISTINCT r.instance_id) INTO v_n FROM new_rows r WHERE r.visible_at_ms = v_at;
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|' || v_n || ${schema}.notify_origin());
    END IF;
    RETURN NULL;
END
$$;

-- Messages released by an abandon (at once, or at the end of its delay). Claims only tag rows: no hint.
CREATE FUNCTION ${schema}.notify_orchestrator_update()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
    v_n  BIGINT;
BEGIN
    SELECT min(n.visible_at_ms), count(DISTINCT n.instance_id) INTO v_at, v_n
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.lock_token IS NULL AND (o.lock_token IS NOT NULL OR o.visible_at_ms <> n.visible_at_ms);
    IF v_n > 0 THEN
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|' || v_n || ${schema}.notify_origin());
    END IF;
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
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|0' || ${schema}.notify_origin());
    END IF;
    RETURN NULL;
END
$$;

-- An orchestration lease ended (ack, abandon): messages that arrived during the turn are claimable again.
CREATE FUNCTION ${schema}.notify_instance_release()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
    v_n  BIGINT;
BEGIN
    SELECT min(q.visible_at_ms), count(DISTINCT q.instance_id) INTO v_at, v_n
      FROM ${schema}.orchestrator_queue q
     WHERE q.instance_id IN (SELECT o.instance_id FROM old_rows o) AND q.lock_token IS NULL;
    IF v_n > 0 THEN
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|' || v_n || ${schema}.notify_origin());
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION ${schema}.notify_worker_insert()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at   BIGINT;
    v_n    BIGINT;
    v_u    BOOLEAN;
    v_tags TEXT[];
    v_s    BOOLEAN;
BEGIN
    SELECT min(r.visible_at_ms), count(*), bool_or(r.tag IS NULL),
           COALESCE(array_agg(DISTINCT r.tag) FILTER (WHERE r.tag IS NOT NULL), '{}'),
           bool_or(r.session_id IS NOT NULL)
      INTO v_at, v_n, v_u, v_tags, v_s
      FROM new_rows r;
    IF v_n > 0 THEN
        PERFORM ${schema}.notify_worker(v_at, v_n, v_u, v_tags, v_s);
    END IF;
    RETURN NULL;
END
$$;

-- One statement either releases items (abandon: claimable at their visibility time) or leases them (claim, renew:
-- claimable again when the lease ends, n = 0); a statement doing both names the released items.
CREATE FUNCTION ${schema}.notify_worker_update()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at   BIGINT;
    v_n    BIGINT;
    v_u    BOOLEAN;
    v_tags TEXT[];
    v_s    BOOLEAN;
BEGIN
    SELECT min(n.visible_at_ms), count(*), bool_or(n.tag IS NULL),
           COALESCE(array_agg(DISTINCT n.tag) FILTER (WHERE n.tag IS NOT NULL), '{}'),
           bool_or(n.session_id IS NOT NULL)
      INTO v_at, v_n, v_u, v_tags, v_s
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.lock_token IS NULL AND (o.lock_token IS NOT NULL OR o.visible_at_ms <> n.visible_at_ms);
    IF v_n > 0 THEN
        PERFORM ${schema}.notify_worker(v_at, v_n, v_u, v_tags, v_s);
        RETURN NULL;
    END IF;

    SELECT min(n.locked_until_ms), bool_or(n.tag IS NULL),
           COALESCE(array_agg(DISTINCT n.tag) FILTER (WHERE n.tag IS NOT NULL), '{}'),
           bool_or(n.session_id IS NOT NULL)
      INTO v_at, v_u, v_tags, v_s
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.lock_token IS NOT NULL AND n.locked_until_ms IS DISTINCT FROM o.locked_until_ms;
    IF v_at IS NOT NULL THEN
        PERFORM ${schema}.notify_worker(v_at, 0, v_u, v_tags, v_s);
    END IF;
    RETURN NULL;
END
$$;

-- A session lease was written: when it ends, the session's items become claimable by other owners.
CREATE FUNCTION ${schema}.notify_session_lease()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
BEGIN
    SELECT min(r.locked_until_ms) INTO v_at FROM new_rows r;
    IF v_at IS NOT NULL THEN
        PERFORM pg_notify('${channel}', 's|' || v_at || ${schema}.notify_origin());
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
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_session_lease();

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

-- Activation is the setting (read by providers) and the triggers (for every other writer), changed together.
CREATE OR REPLACE FUNCTION ${schema}.set_long_polling(p_enabled BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ${schema}.hub_settings (name, value)
    VALUES ('long_polling', CASE WHEN p_enabled THEN 'on' ELSE 'off' END)
    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value;
    PERFORM ${schema}.set_notify_triggers(p_enabled);
END
$$;

-- Installed disabled; a schema activated at V7 stays activated, now with its triggers.
SELECT ${schema}.set_notify_triggers(false);
SELECT ${schema}.set_notify_triggers(true) WHERE ${schema}.long_polling_activated();
