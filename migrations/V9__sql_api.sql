-- The SQL API: a documented, stable way for writers that are not a pgdurable provider (an application's own
-- triggers, services in other languages, an operator in psql) to put work into a task hub (docs/sql-api.md).
--
-- Compatibility promise. The five public functions below, start_orchestration, raise_event, cancel_instance,
-- enqueue_activity and enqueue_work_item, keep their names, argument names and types, argument order and VOID
-- result in every later migration. A later migration may only add trailing arguments with defaults, and does so
-- by replacing the function (never by adding an overload, which would make existing calls ambiguous), so every
-- call written against this version keeps working. The functions prefixed sql_api_ are internal helpers and, like
-- every other function of the schema, may change in any migration.
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
