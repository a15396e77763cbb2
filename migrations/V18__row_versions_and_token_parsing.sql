-- Two costs of the batched worker queue path, measured in one session on a throw-away schema (issue 12,
-- docs/benchmarks.md "Row versions and token parsing").
--
-- 1. worker_token_row parsed every token with a regular expression: about 1.6 us a token, a third of what a batched ack
--    of 100 costs on the server. The same test written with plain string functions takes about 0.5 us. It accepts
--    exactly what the expression accepted: '@', 1 to 18 ASCII digits, ':'.
--
-- 2. fetch_work_items locked its candidates and then found each one again through the primary key to update it. The
--    candidates' row versions (ctid) are known from the locking SELECT, and a row this transaction holds FOR UPDATE
--    keeps its version until the transaction writes it, so the claim now updates the rows by version (a TID scan per
--    row instead of a descent of the primary key). The id is compared as well: it costs nothing measurable and keeps
--    the update to the rows the selection chose, whatever the locking rules allow.
--
-- Signatures and results are unchanged; nodes of earlier versions work against this schema as before.

CREATE OR REPLACE FUNCTION ${schema}.worker_token_row(p_token TEXT)
RETURNS BIGINT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- A CASE, not AND: each test guards the next (a negative substring length and a cast of anything but digits
    -- raise errors), and CASE keeps their order.
    SELECT CASE WHEN left(p_token, 1) <> '@' THEN NULL
                WHEN strpos(p_token, ':') NOT BETWEEN 3 AND 20 THEN NULL
                WHEN ltrim(substring(p_token FROM 2 FOR strpos(p_token, ':') - 2), '0123456789') <> '' THEN NULL
                ELSE substring(p_token FROM 2 FOR strpos(p_token, ':') - 2)::BIGINT END
$$;

-- The batched claim of V17, updating the claimed rows by row version (above).
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
    v_rows     TID[];
    v_claimed_rows TID[] := '{}';
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
                   array_agg(c.n_bytes ORDER BY c.id), array_agg(c.row_version ORDER BY c.id)
              INTO v_ids, v_sessions, v_sizes, v_rows
              FROM (SELECT q.id, q.session_id, octet_length(q.work_item)::BIGINT AS n_bytes, q.ctid AS row_version
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
                   array_agg(c.n_bytes ORDER BY c.id), array_agg(c.row_version ORDER BY c.id)
              INTO v_ids, v_sessions, v_sizes, v_rows
              FROM (SELECT q.id, q.session_id, octet_length(q.work_item)::BIGINT AS n_bytes, q.ctid AS row_version
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
        v_rows := v_rows[1:v_keep];

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
                           COALESCE(array_agg(k.n_bytes ORDER BY k.id), '{}'),
                           COALESCE(array_agg(k.row_version ORDER BY k.id), '{}')
                      INTO v_ids, v_sessions, v_sizes, v_rows
                      FROM unnest(v_ids, v_sessions, v_sizes, v_rows) AS k(id, s, n_bytes, row_version)
                     WHERE k.s IS DISTINCT FROM v_session OR k.id < v_cut;
                    v_lost := v_lost || v_session;
                    v_dropped := TRUE;
                END IF;
            END LOOP;
        END IF;

        v_claimed := v_claimed || v_ids;
        v_claimed_rows := v_claimed_rows || v_rows;
        v_bytes := v_bytes + COALESCE((SELECT sum(x) FROM unnest(v_sizes) AS x), 0);
        EXIT WHEN NOT v_dropped;
    END LOOP;

    IF cardinality(v_claimed) > 0 THEN
        RETURN QUERY
        WITH claimed AS (
            UPDATE ${schema}.worker_queue q
               SET lock_token = '@' || q.id || ':' || p_token_prefix, locked_until_ms = p_now + p_lock_ms,
                   attempt_count = q.attempt_count + 1
              FROM unnest(v_claimed_rows, v_claimed) AS t(row_version, id)
             WHERE q.ctid = t.row_version AND q.id = t.id
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
