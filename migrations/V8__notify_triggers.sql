-- Wake-ups from every writer. Since V7 only a pgdurable provider could wake a parked fetch (it announces its own
-- commits); an application's trigger, a service in another language, an operator's psql session or a node of an
-- older release left its work to the one-second fallback probe. The design's notify triggers come back for them,
-- beside the announcer, installed DISABLED: activation (`pgdurable activate`, or a provider built with APPLY_ALL
-- and long polling) enables them together with the activation setting, `activate --off` disables both.
--
-- A provider's own writes do not pay for them: the provider wraps the time argument of every write in
-- provider_write(...), which marks its transaction (transaction-local settings, so it holds behind a
-- transaction-pooling proxy), and the triggers' WHEN clause skips marked statements (and whatever cascades from
-- them); the provider announces those writes after the commit as before. What remains of the triggers on those
-- writes is PostgreSQL's capture of the transition tables, which it does for every defined REFERENCING trigger,
-- enabled or not (measured in docs/benchmarks.md). A provider configured with transactionalNotify marks its writes with its
-- origin only: the triggers then notify from inside its transactions too (no crash window, no group commit), and
-- the origin lets the writing provider ignore the echo of what it already routed locally.
--
-- One NOTIFY per statement and queue, never one per row, nothing when no row qualifies; payloads are the ones the
-- listener already reads (docs/long-polling.md), optionally followed by |origin:
--   o|<at_ms>|<n>                   n instances claimable from at_ms (n = 0: a lease ends at at_ms)
--   w|<at_ms>|<n>|<u>|<tags>|<s>    worker: u = 1 untagged items, tags comma-separated or '*', s = 1 session items
--   s|<at_ms>                       a session lease ends at at_ms
-- Orchestrator rows are counted the way the announcer merges due hints: every instance whose message is due (at or
-- before the writer's time: provider_write's, else the database clock) in one payload at the latest due time; only
-- when none is due does the payload name the earliest future time. Future times besides (a transactionalNotify turn
-- that schedules timers next to its messages) reach other processes through a timer scan or the fallback probe,
-- while the writing provider routes all of them itself.

CREATE FUNCTION ${schema}.provider_write(p_now BIGINT, p_origin TEXT, p_announced BOOLEAN)
RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- On every provider write: an announced one sets only what the triggers' WHEN clause reads.
    IF p_announced THEN
        PERFORM set_config('pgdurable.announced', '${schema_name}', true);
    ELSE
        PERFORM set_config('pgdurable.origin', COALESCE(p_origin, ''), true),
                set_config('pgdurable.now', COALESCE(p_now::TEXT, ''), true);
    END IF;
    RETURN p_now;
END
$$;

-- The same mark for the batched ack, whose time argument is one time per item.
CREATE FUNCTION ${schema}.provider_write(p_nows BIGINT[], p_origin TEXT, p_announced BOOLEAN)
RETURNS BIGINT[]
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM ${schema}.provider_write((SELECT max(t) FROM unnest(p_nows) t), p_origin, p_announced);
    RETURN p_nows;
END
$$;

-- The same mark for writes without a time argument (deleting instances).
CREATE FUNCTION ${schema}.provider_write(p_flag BOOLEAN, p_origin TEXT, p_announced BOOLEAN)
RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM ${schema}.provider_write(NULL::BIGINT, p_origin, p_announced);
    RETURN p_flag;
END
$$;

-- The writer's time in epoch milliseconds: the provider's (application clock) when it marked the transaction, else
-- the database clock.
CREATE FUNCTION ${schema}.notify_now()
RETURNS BIGINT
LANGUAGE sql VOLATILE AS $$
    SELECT COALESCE(NULLIF(current_setting('pgdurable.now', true), '')::BIGINT,
                    floor(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT);
$$;

-- One orchestrator payload for messages (p_at, p_instance) of one statement: the due ones together at the latest due
-- time, else the earliest future time; nothing for no rows.
CREATE FUNCTION ${schema}.notify_orchestrator(p_at BIGINT[], p_instances TEXT[])
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_now    BIGINT := ${schema}.notify_now();
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
        PERFORM pg_notify('${channel}', 'o|' || v_due_at || '|' || v_due_n || ${schema}.notify_origin());
    ELSIF v_first IS NOT NULL THEN
        SELECT count(DISTINCT m.instance) INTO v_n FROM unnest(p_at, p_instances) AS m(at, instance)
         WHERE m.at = v_first;
        PERFORM pg_notify('${channel}', 'o|' || v_first || '|' || v_n || ${schema}.notify_origin());
    END IF;
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

-- One worker payload for the rows (p_at, p_tags, p_sessions) of one statement (at least one row): their earliest
-- time, how many (0 with p_lease_end: they come back when their leases end) and their routing.
CREATE FUNCTION ${schema}.notify_worker(p_at BIGINT[], p_tags TEXT[], p_sessions TEXT[], p_lease_end BOOLEAN)
RETURNS VOID
LANGUAGE sql AS $$
    SELECT pg_notify('${channel}', 'w|' || min(r.at) || '|' || CASE WHEN p_lease_end THEN 0 ELSE count(*) END
                     || '|' || bool_or(r.tag IS NULL)::INT || '|'
                     || ${schema}.notify_tag_field(
                            COALESCE(array_agg(DISTINCT r.tag) FILTER (WHERE r.tag IS NOT NULL), '{}'))
                     || '|' || bool_or(r.session IS NOT NULL)::INT || ${schema}.notify_origin())
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
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|0' || ${schema}.notify_origin());
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
        PERFORM pg_notify('${channel}', 's|' || v_at || ${schema}.notify_origin());
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
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('pgdurable.announced', true) IS DISTINCT FROM '${schema_name}')
    EXECUTE FUNCTION ${schema}.notify_session_lease_update();

-- fetch_orchestration_item as in V2, with one change: whether the candidate can start at all is decided before its
-- lease is taken, not after. A lease taken and dropped again in the same transaction would make the notify triggers
-- of a transactionalNotify provider announce a claim that never happened and release the instance's messages as
-- claimable, and two such providers would wake each other for an instance that cannot start (found in review:
-- 167 notifying transactions in 4 s). The per-instance advisory lock still serialises fetchers on the candidate.
CREATE OR REPLACE FUNCTION ${schema}.fetch_orchestration_item(
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
            CONTINUE;
        END IF;

        INSERT INTO ${schema}.instance_locks AS l (instance_id, lock_token, locked_until_ms, locked_at_ms)
        VALUES (v_instance, p_token, p_now + p_lock_ms, p_now)
        ON CONFLICT ON CONSTRAINT instance_locks_pkey DO UPDATE
           SET lock_token = EXCLUDED.lock_token, locked_until_ms = EXCLUDED.locked_until_ms,
               locked_at_ms = EXCLUDED.locked_at_ms
         WHERE l.locked_until_ms <= p_now;
        CONTINUE WHEN NOT FOUND;

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
-- set_long_polling (V7) stays what it was, a setting alone, so that a node of the previous release calling it during
-- a rolling upgrade runs no DDL it cannot bound.
CREATE FUNCTION ${schema}.set_activation(p_enabled BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.set_long_polling(p_enabled);
    PERFORM ${schema}.set_notify_triggers(p_enabled);
END
$$;

-- Installed disabled; a schema activated at V7 stays activated, now with its triggers.
SELECT ${schema}.set_notify_triggers(false);
SELECT ${schema}.set_notify_triggers(true) WHERE ${schema}.long_polling_activated();
