-- Wake-up hints for long polling, installed DISABLED. `pgdurable activate` (or a provider built with APPLY_ALL and
-- long polling on) enables them for the whole schema. Triggers are statement-level over transition tables: one
-- statement sends at most one notification per table, never one per row, and nothing when no row qualifies.
--
-- Payload (text, far below the 8 KB limit), fields separated by '|':
--   o|<at_ms>|<n>                      orchestrator: n instances claimable from at_ms (n = 0: a lease ends at at_ms)
--   w|<at_ms>|<n>|<u>|<tags>|<s>       worker: u = 1 if untagged items, tags = up to 5 tags or '*', s = 1 if
--                                      session-bound items; n = 0: leases end at at_ms
--   s|<at_ms>                          a session lease ends at at_ms (its items become claimable by others)
-- A hint is only a hint: the waiter's fetch decides what is really claimable.

CREATE FUNCTION ${schema}.tag_hint(p_tags TEXT[])
RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN cardinality(p_tags) = 0 THEN ''
                WHEN cardinality(p_tags) > 5
                  OR EXISTS (SELECT 1 FROM unnest(p_tags) t WHERE t ~ '[|,]' OR length(t) > 64) THEN '*'
                ELSE array_to_string(p_tags, ',') END;
$$;

-- New orchestrator messages: one hint per distinct visibility time (a turn may insert immediate messages and
-- timers together, and each timer needs its own deadline), the earliest 8; a ninth time, if any, becomes an
-- open-ended hint whose wake finds the rest.
CREATE FUNCTION ${schema}.notify_orchestrator_insert()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN SELECT t.visible_at_ms AS at, count(DISTINCT t.instance_id) AS n, row_number() OVER (ORDER BY t.visible_at_ms) AS k
               FROM (SELECT * FROM new_rows ORDER BY visible_at_ms) t
              GROUP BY t.visible_at_ms
              ORDER BY t.visible_at_ms
              LIMIT 9
    LOOP
        PERFORM pg_notify('${channel}', 'o|' || r.at || '|' || CASE WHEN r.k = 9 THEN 0 ELSE r.n END);
    END LOOP;
    RETURN NULL;
END
$$;

-- Messages released by an abandon (with or without delay).
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
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|' || v_n);
    END IF;
    RETURN NULL;
END
$$;

-- An orchestration lease was taken or renewed: tell every node when it ends, so a crashed owner's instance is
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

-- An orchestration lease was released (ack, abandon, delete): messages that arrived during the turn, or that an
-- abandon did not delay, are claimable now. The released batch's own rows are excluded (an ack deleted them, an
-- abandon re-times them and its update trigger speaks for them).
CREATE FUNCTION ${schema}.notify_instance_release()
RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    v_at BIGINT;
    v_n  BIGINT;
BEGIN
    SELECT min(q.visible_at_ms), count(DISTINCT q.instance_id) INTO v_at, v_n
      FROM old_rows o
      JOIN ${schema}.orchestrator_queue q
        ON q.instance_id = o.instance_id AND q.lock_token IS DISTINCT FROM o.lock_token;
    IF v_n > 0 THEN
        PERFORM pg_notify('${channel}', 'o|' || v_at || '|' || v_n);
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
        PERFORM pg_notify('${channel}', 'w|' || v_at || '|' || v_n || '|' || v_u::INT || '|'
                          || ${schema}.tag_hint(v_tags) || '|' || v_s::INT);
    END IF;
    RETURN NULL;
END
$$;

-- Released items (abandon, with or without delay) are claimable at their visible_at; claimed or renewed items
-- become claimable again when their lease ends (n = 0 marks that future hint).
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
        PERFORM pg_notify('${channel}', 'w|' || v_at || '|' || v_n || '|' || v_u::INT || '|'
                          || ${schema}.tag_hint(v_tags) || '|' || v_s::INT);
    END IF;

    SELECT min(n.locked_until_ms), bool_or(n.tag IS NULL),
           COALESCE(array_agg(DISTINCT n.tag) FILTER (WHERE n.tag IS NOT NULL), '{}'),
           bool_or(n.session_id IS NOT NULL)
      INTO v_at, v_u, v_tags, v_s
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.lock_token IS NOT NULL AND n.locked_until_ms IS DISTINCT FROM o.locked_until_ms;
    IF v_at IS NOT NULL THEN
        PERFORM pg_notify('${channel}', 'w|' || v_at || '|0|' || v_u::INT || '|'
                          || ${schema}.tag_hint(v_tags) || '|' || v_s::INT);
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
        PERFORM pg_notify('${channel}', 's|' || v_at);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER pgdurable_notify_orchestrator_insert AFTER INSERT ON ${schema}.orchestrator_queue
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_orchestrator_insert();
CREATE TRIGGER pgdurable_notify_orchestrator_update AFTER UPDATE ON ${schema}.orchestrator_queue
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_orchestrator_update();
CREATE TRIGGER pgdurable_notify_instance_lease_insert AFTER INSERT ON ${schema}.instance_locks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_instance_lease();
CREATE TRIGGER pgdurable_notify_instance_lease_update AFTER UPDATE ON ${schema}.instance_locks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_instance_lease();
CREATE TRIGGER pgdurable_notify_instance_release AFTER DELETE ON ${schema}.instance_locks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_instance_release();
CREATE TRIGGER pgdurable_notify_worker_insert AFTER INSERT ON ${schema}.worker_queue
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_worker_insert();
CREATE TRIGGER pgdurable_notify_worker_update AFTER UPDATE ON ${schema}.worker_queue
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_worker_update();
CREATE TRIGGER pgdurable_notify_session_insert AFTER INSERT ON ${schema}.sessions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_session_lease();
CREATE TRIGGER pgdurable_notify_session_update AFTER UPDATE ON ${schema}.sessions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.notify_session_lease();

ALTER TABLE ${schema}.orchestrator_queue DISABLE TRIGGER pgdurable_notify_orchestrator_insert;
ALTER TABLE ${schema}.orchestrator_queue DISABLE TRIGGER pgdurable_notify_orchestrator_update;
ALTER TABLE ${schema}.instance_locks DISABLE TRIGGER pgdurable_notify_instance_lease_insert;
ALTER TABLE ${schema}.instance_locks DISABLE TRIGGER pgdurable_notify_instance_lease_update;
ALTER TABLE ${schema}.instance_locks DISABLE TRIGGER pgdurable_notify_instance_release;
ALTER TABLE ${schema}.worker_queue DISABLE TRIGGER pgdurable_notify_worker_insert;
ALTER TABLE ${schema}.worker_queue DISABLE TRIGGER pgdurable_notify_worker_update;
ALTER TABLE ${schema}.sessions DISABLE TRIGGER pgdurable_notify_session_insert;
ALTER TABLE ${schema}.sessions DISABLE TRIGGER pgdurable_notify_session_update;

-- Activation state of the notify triggers: how many of them are enabled (all or none in normal operation).
CREATE FUNCTION ${schema}.notify_trigger_state()
RETURNS TABLE (enabled INT, total INT)
LANGUAGE sql STABLE AS $$
    SELECT count(*) FILTER (WHERE t.tgenabled <> 'D')::INT, count(*)::INT
      FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = '${schema_name}' AND t.tgname LIKE 'pgdurable\_notify\_%';
$$;

-- Enables (or disables) every notify trigger of the schema. DDL: callers hold the schema's migration lock.
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
    LOOP
        EXECUTE format('ALTER TABLE %I.%I %s TRIGGER %I', '${schema_name}', r.relname,
                       CASE WHEN p_enabled THEN 'ENABLE' ELSE 'DISABLE' END, r.tgname);
    END LOOP;
END
$$;
