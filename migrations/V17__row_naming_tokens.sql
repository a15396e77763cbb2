-- Batched claims write lock tokens that name their row (issue 12, docs/benchmarks.md "Row-naming tokens").
--
-- A claim is a non-HOT update, so every index of worker_queue gets an entry for the leased row version. The unique
-- index on lock_token was one of four, with a uniqueness check on top, and it existed only so that an ack, renewal
-- or release could find its row by token. A token of the form '@<row id>:<random part>' finds its row by primary key
-- instead, and the token itself is still compared, so a stale token of a reclaimed row is refused as before.
--
-- fetch_work_items now writes such tokens. Every other writer of tokens (the single claim, hand-overs, anything an
-- older node sends) passes its own token in and gets no id back, so those tokens keep the form they had and are still
-- looked up by token: the unique index stays, but as a partial index that leaves out row-naming tokens (and the NULL
-- tokens of unleased rows, which it held one entry each for). Row-naming tokens are unique through their row id and
-- their random part.
--
-- Rolling upgrades: all token handling is in these functions, so nodes of earlier versions work unchanged against
-- this schema; they receive row-naming tokens from fetch_work_items and hand them back to functions that read them.
-- Leases taken before this migration keep their tokens, which the partial index covers.
--
-- The index is built before the constraint is dropped, inside the migration's transaction: writes to worker_queue wait
-- for the build (one pass over the leased rows' tokens).
CREATE UNIQUE INDEX worker_queue_lock_token_idx ON ${schema}.worker_queue (lock_token) WHERE lock_token NOT LIKE '@%';
ALTER TABLE ${schema}.worker_queue DROP CONSTRAINT worker_queue_lock_token_key;

-- The row id a row-naming token names; NULL for any other text (a token of another form, or a malformed one).
--
-- Where a row is found by the id, its token is compared with IS NOT DISTINCT FROM (the same test for the non-NULL
-- tokens these functions get): an equality would tell the planner that lock_token is set, which lets it read the
-- lease-end index (partial on lock_token IS NOT NULL) from end to end instead of probing the primary key, and it
-- chose that for a queue with few leases.
CREATE FUNCTION ${schema}.worker_token_row(p_token TEXT)
RETURNS BIGINT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_token ~ '^@[0-9]{1,18}:' THEN substring(p_token FROM 2 FOR strpos(p_token, ':') - 2)::BIGINT END
$$;

-- The worker row that may hold a token: named by it, or found through the partial index; NULL when none can. The
-- caller still compares the row's lock_token with the token. Used where a token was refused (to say why); the hot
-- paths below look the row up in their own statement instead, so that a token of either kind costs one index probe.
CREATE FUNCTION ${schema}.worker_row_of(p_token TEXT)
RETURNS BIGINT
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(${schema}.worker_token_row(p_token),
                    (SELECT w.id FROM ${schema}.worker_queue w
                      WHERE w.lock_token = p_token AND w.lock_token NOT LIKE '@%'))
$$;

CREATE OR REPLACE FUNCTION ${schema}.raise_worker_token_error(p_token TEXT, p_now BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_until BIGINT;
BEGIN
    SELECT w.locked_until_ms INTO v_until FROM ${schema}.worker_queue w
     WHERE w.id = ${schema}.worker_row_of(p_token) AND w.lock_token IS NOT DISTINCT FROM p_token;
    IF FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: the work item lease expired % ms ago', p_now - v_until
            USING ERRCODE = 'PD001';
    END IF;
    RAISE EXCEPTION 'Invalid lock token: worker queue item not found (unknown token, already acked, or cancelled)'
        USING ERRCODE = 'PD001';
END
$$;

-- The single-token operations take one of two statements: by primary key for a row-naming token, by the partial
-- index for any other. One statement for both (a lookup of the row id first) was measured at 6-7 us more per call
-- for the other tokens, which single claims, hand-overs and older nodes still write.
CREATE OR REPLACE FUNCTION ${schema}.ack_work_item(
    p_token TEXT, p_now BIGINT, p_instance TEXT, p_kind TEXT, p_completion TEXT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_row     BIGINT := ${schema}.worker_token_row(p_token);
    v_session TEXT;
BEGIN
    IF v_row IS NOT NULL THEN
        DELETE FROM ${schema}.worker_queue w
         WHERE w.id = v_row AND w.lock_token IS NOT DISTINCT FROM p_token AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    ELSE
        DELETE FROM ${schema}.worker_queue w
         WHERE w.lock_token = p_token AND w.lock_token NOT LIKE '@%' AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    END IF;
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

CREATE OR REPLACE FUNCTION ${schema}.renew_work_item_lock(p_token TEXT, p_now BIGINT, p_extend_ms BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    v_row     BIGINT := ${schema}.worker_token_row(p_token);
    v_session TEXT;
BEGIN
    IF v_row IS NOT NULL THEN
        UPDATE ${schema}.worker_queue w SET locked_until_ms = p_now + p_extend_ms
         WHERE w.id = v_row AND w.lock_token IS NOT DISTINCT FROM p_token AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    ELSE
        UPDATE ${schema}.worker_queue w SET locked_until_ms = p_now + p_extend_ms
         WHERE w.lock_token = p_token AND w.lock_token NOT LIKE '@%' AND w.locked_until_ms > p_now
        RETURNING w.session_id INTO v_session;
    END IF;
    IF NOT FOUND THEN
        PERFORM ${schema}.raise_worker_token_error(p_token, p_now);
    END IF;
    IF v_session IS NOT NULL THEN
        UPDATE ${schema}.sessions s SET last_activity_at_ms = p_now
         WHERE s.session_id = v_session AND s.locked_until_ms > p_now;
    END IF;
END
$$;

-- A release is rare (failures, undecodable items), so it takes the one-statement form.
CREATE OR REPLACE FUNCTION ${schema}.abandon_work_item(
    p_token TEXT, p_now BIGINT, p_delay_ms BIGINT, p_ignore_attempt BOOLEAN)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ${schema}.worker_queue w
       SET lock_token = NULL, locked_until_ms = NULL,
           visible_at_ms = p_now + GREATEST(COALESCE(p_delay_ms, 0), 0),
           attempt_count = CASE WHEN p_ignore_attempt THEN GREATEST(0, w.attempt_count - 1) ELSE w.attempt_count END
     WHERE w.id = ${schema}.worker_row_of(p_token) AND w.lock_token IS NOT DISTINCT FROM p_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token: no worker item holds it (unknown, acked or cancelled)'
            USING ERRCODE = 'PD001';
    END IF;
END
$$;

-- The batched ack of V16. Each token's row is resolved once, in req: a row-naming token by parsing it (inline), another
-- by the partial index (worker_row_of's lookup, written out here: that function cannot be inlined, and a call per
-- token would cost a flush of 100 acks about a quarter of a millisecond).
CREATE OR REPLACE FUNCTION ${schema}.ack_work_items(
    p_tokens TEXT[], p_nows BIGINT[], p_instances TEXT[], p_kinds TEXT[], p_completions TEXT[])
RETURNS TABLE (pos INT, acked BOOLEAN, expired_ms BIGINT)
LANGUAGE plpgsql
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_done  INT[];
    v_sessions TEXT[];
    v_session_nows BIGINT[];
    v_count INT := COALESCE(cardinality(p_tokens), 0);
    v_acked BOOLEAN[];
    v_pos   INT;
BEGIN
    WITH req AS (
        SELECT DISTINCT ON (r.token) r.n::INT AS n, r.token, r.now_ms, r.instance_id, r.kind, r.completion,
               COALESCE(${schema}.worker_token_row(r.token),
                        (SELECT o.id FROM ${schema}.worker_queue o
                          WHERE o.lock_token = r.token AND o.lock_token NOT LIKE '@%')) AS row_id
          FROM unnest(p_tokens, p_nows, p_instances, p_kinds, p_completions) WITH ORDINALITY
               AS r(token, now_ms, instance_id, kind, completion, n)
         ORDER BY r.token, r.n),
    deleted AS (
        -- A nested loop over the primary key (hash and merge joins are off for this function), never a scan of the
        -- leased rows; the lease test is written so that it cannot drive an index.
        DELETE FROM ${schema}.worker_queue w USING req r
         WHERE w.id = r.row_id AND w.lock_token IS NOT DISTINCT FROM r.token AND w.locked_until_ms - r.now_ms > 0
        RETURNING r.n, w.session_id, r.now_ms, r.instance_id, r.kind, r.completion),
    completions AS (
        INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
        SELECT d.instance_id, d.kind, d.completion, d.now_ms, d.now_ms
          FROM deleted d WHERE d.completion IS NOT NULL ORDER BY d.n
        RETURNING 1)
    SELECT COALESCE(array_agg(d.n), '{}'),
           COALESCE(array_agg(d.session_id) FILTER (WHERE d.session_id IS NOT NULL), '{}'),
           COALESCE(array_agg(d.now_ms) FILTER (WHERE d.session_id IS NOT NULL), '{}')
      INTO v_done, v_sessions, v_session_nows
      FROM deleted d;

    IF cardinality(v_sessions) > 0 THEN
        PERFORM 1 FROM ${schema}.sessions s
         WHERE s.session_id = ANY (v_sessions) ORDER BY s.session_id FOR UPDATE;
        UPDATE ${schema}.sessions s SET last_activity_at_ms = GREATEST(s.last_activity_at_ms, a.now_ms)
          FROM (SELECT x.session_id, max(x.now_ms) AS now_ms
                  FROM unnest(v_sessions, v_session_nows) AS x(session_id, now_ms) GROUP BY x.session_id) a
         WHERE s.session_id = a.session_id AND s.locked_until_ms > a.now_ms;
    END IF;

    IF cardinality(v_done) = v_count THEN
        -- Each position was acked (so no token was given twice): nothing to look up.
        RETURN QUERY SELECT g, TRUE, NULL::BIGINT FROM generate_series(1, v_count) AS g;
        RETURN;
    END IF;
    v_acked := array_fill(FALSE, ARRAY[v_count]);
    FOREACH v_pos IN ARRAY v_done LOOP
        v_acked[v_pos] := TRUE;
    END LOOP;
    RETURN QUERY
    SELECT r.n::INT, v_acked[r.n::INT],
           CASE WHEN v_acked[r.n::INT] THEN NULL
                ELSE (SELECT r.now_ms - w.locked_until_ms FROM ${schema}.worker_queue w
                       WHERE w.id = ${schema}.worker_row_of(r.token) AND w.lock_token IS NOT DISTINCT FROM r.token
                         AND r.now_ms - w.locked_until_ms >= 0) END
      FROM unnest(p_tokens, p_nows) WITH ORDINALITY AS r(token, now_ms, n)
     ORDER BY r.n;
END
$$;

-- The batched claim of V11; the only change is the token it writes: '@<row id>:<prefix>' instead of '<prefix>.<n>'.
CREATE OR REPLACE FUNCTION ${schema}.fetch_work_items(
    p_now BIGINT, p_lock_ms BIGINT, p_token_prefix TEXT, p_owner TEXT, p_session_lock_ms BIGINT,
    p_tag_mode INT, p_tags TEXT[], p_max_items INT, p_max_bytes BIGINT, p_first_free BOOLEAN)
RETURNS TABLE (token TEXT, item TEXT, attempts INT)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_lost     TEXT[] := '{}';
    v_claimed  BIGINT[] := '{}';
    v_bytes    BIGINT := 0;
    v_round_bytes BIGINT;
    v_full     BOOLEAN := FALSE;
    v_dropped  BOOLEAN;
    v_ids      BIGINT[];
    v_sessions TEXT[];
    v_sizes    BIGINT[];
    v_keep     INT;
    v_session  TEXT;
    v_cut      BIGINT;
    v_newest   BIGINT;
    -- Has a lease ended by p_now on a row it keeps from the unleased index? (a range scan of the lease-end index;
    -- written here, not in a function of its own, so that its plan is cached with the claim's)
    v_expired  BOOLEAN := EXISTS (SELECT 1 FROM ${schema}.worker_queue w
                                   WHERE w.lock_token IS NOT NULL AND w.locked_until_ms <= p_now
                                     AND w.visible_at_ms <= p_now);
BEGIN
    FOR v_round IN 1..8 LOOP
        EXIT WHEN cardinality(v_claimed) >= p_max_items OR v_full;

        IF v_expired THEN
            SELECT array_agg(c.id ORDER BY c.id), array_agg(c.session_id ORDER BY c.id),
                   array_agg(c.n_bytes ORDER BY c.id)
              INTO v_ids, v_sessions, v_sizes
              FROM (SELECT q.id, q.session_id, octet_length(q.work_item)::BIGINT AS n_bytes
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
                                     OR (q.session_id <> ALL (v_lost)
                                         AND (s.session_id IS NULL OR s.worker_id = p_owner)) END
                       AND q.id <> ALL (v_claimed)
                     ORDER BY q.id
                     LIMIT p_max_items - cardinality(v_claimed)
                       FOR UPDATE OF q SKIP LOCKED) c;
        ELSE
            SELECT array_agg(c.id ORDER BY c.id), array_agg(c.session_id ORDER BY c.id),
                   array_agg(c.n_bytes ORDER BY c.id)
              INTO v_ids, v_sessions, v_sizes
              FROM (SELECT q.id, q.session_id, octet_length(q.work_item)::BIGINT AS n_bytes
                      FROM ${schema}.worker_queue q
                      LEFT JOIN ${schema}.sessions s ON s.session_id = q.session_id AND s.locked_until_ms > p_now
                     WHERE q.visible_at_ms <= p_now
                       AND q.lock_token IS NULL
                       AND CASE p_tag_mode WHEN 0 THEN q.tag IS NULL
                                           WHEN 1 THEN q.tag = ANY (p_tags)
                                           WHEN 2 THEN q.tag IS NULL OR q.tag = ANY (p_tags)
                                           ELSE TRUE END
                       AND CASE WHEN p_owner IS NULL THEN q.session_id IS NULL
                                ELSE q.session_id IS NULL
                                     OR (q.session_id <> ALL (v_lost)
                                         AND (s.session_id IS NULL OR s.worker_id = p_owner)) END
                       AND q.id <> ALL (v_claimed)
                     ORDER BY q.id
                     LIMIT p_max_items - cardinality(v_claimed)
                       FOR UPDATE OF q SKIP LOCKED) c;
        END IF;
        EXIT WHEN v_ids IS NULL;

        -- The reply size: keep the oldest candidates that fit; stop at the first that does not.
        v_keep := 0;
        v_round_bytes := 0;
        FOR i IN 1..cardinality(v_ids) LOOP
            IF v_bytes + v_round_bytes + v_sizes[i] > p_max_bytes
               AND NOT (p_first_free AND cardinality(v_claimed) = 0 AND v_keep = 0) THEN
                v_full := TRUE;
                EXIT;
            END IF;
            v_round_bytes := v_round_bytes + v_sizes[i];
            v_keep := v_keep + 1;
        END LOOP;
        v_ids := v_ids[1:v_keep];
        v_sessions := v_sessions[1:v_keep];
        v_sizes := v_sizes[1:v_keep];

        v_dropped := FALSE;
        IF p_owner IS NOT NULL THEN
            FOR v_session IN SELECT DISTINCT x.s FROM unnest(v_sessions) AS x(s) WHERE x.s IS NOT NULL ORDER BY 1
            LOOP
                IF NOT pg_try_advisory_xact_lock(hashtext('${schema}:session'), hashtext(v_session)) THEN
                    v_cut := 0; -- another fetcher is claiming from this session right now: leave it to them
                ELSE
                    -- FIFO: cut at the session's first claimable item that this call does not hold (only one
                    -- older than the newest item of the session in the batch matters).
                    SELECT max(k.id) INTO v_newest FROM unnest(v_ids, v_sessions) AS k(id, s) WHERE k.s = v_session;
                    SELECT min(o.id) INTO v_cut
                      FROM ${schema}.worker_queue o
                     WHERE o.session_id = v_session AND o.id < v_newest AND o.visible_at_ms <= p_now
                       AND (o.lock_token IS NULL OR o.locked_until_ms <= p_now)
                       AND CASE p_tag_mode WHEN 0 THEN o.tag IS NULL
                                           WHEN 1 THEN o.tag = ANY (p_tags)
                                           WHEN 2 THEN o.tag IS NULL OR o.tag = ANY (p_tags)
                                           ELSE TRUE END
                       AND o.id <> ALL (v_claimed) AND o.id <> ALL (v_ids);
                    IF EXISTS (SELECT 1 FROM unnest(v_ids, v_sessions) AS k(id, s)
                                WHERE k.s = v_session AND (v_cut IS NULL OR k.id < v_cut)) THEN
                        INSERT INTO ${schema}.sessions AS s (session_id, worker_id, locked_until_ms,
                                                             last_activity_at_ms)
                        VALUES (v_session, p_owner, p_now + p_session_lock_ms, p_now)
                        ON CONFLICT (session_id) DO UPDATE
                           SET worker_id = EXCLUDED.worker_id, locked_until_ms = EXCLUDED.locked_until_ms,
                               last_activity_at_ms = EXCLUDED.last_activity_at_ms
                         WHERE s.locked_until_ms <= p_now OR s.worker_id = p_owner;
                        IF NOT FOUND THEN
                            v_cut := 0; -- another owner took the session since the search
                        END IF;
                    END IF;
                END IF;
                IF v_cut IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(v_ids, v_sessions) AS k(id, s)
                                                  WHERE k.s = v_session AND k.id >= v_cut) THEN
                    SELECT COALESCE(array_agg(k.id ORDER BY k.id), '{}'), COALESCE(array_agg(k.s ORDER BY k.id), '{}'),
                           COALESCE(array_agg(k.n_bytes ORDER BY k.id), '{}')
                      INTO v_ids, v_sessions, v_sizes
                      FROM unnest(v_ids, v_sessions, v_sizes) AS k(id, s, n_bytes)
                     WHERE k.s IS DISTINCT FROM v_session OR k.id < v_cut;
                    v_lost := v_lost || v_session;
                    v_dropped := TRUE;
                END IF;
            END LOOP;
        END IF;

        v_claimed := v_claimed || v_ids;
        v_bytes := v_bytes + COALESCE((SELECT sum(x) FROM unnest(v_sizes) AS x), 0);
        EXIT WHEN NOT v_dropped;
    END LOOP;

    IF cardinality(v_claimed) > 0 THEN
        RETURN QUERY
        WITH claimed AS (
            UPDATE ${schema}.worker_queue q
               SET lock_token = '@' || q.id || ':' || p_token_prefix, locked_until_ms = p_now + p_lock_ms,
                   attempt_count = q.attempt_count + 1
              FROM unnest(v_claimed) AS t(id)
             WHERE q.id = t.id
            RETURNING q.id, q.lock_token, q.work_item, q.attempt_count)
        SELECT c.lock_token, c.work_item, c.attempt_count FROM claimed c ORDER BY c.id;
    END IF;
    IF v_full THEN
        -- A last row with a NULL token says the byte bound stopped the claim (the reply is full).
        token := NULL;
        item := NULL;
        attempts := NULL;
        RETURN NEXT;
    END IF;
END
$$;
