-- Batching: a batched worker fetch, a batched terminal ack and batched enqueues (docs/batching.md). Each is one
-- function call, so one round trip and one transaction, working on its rows with set-based statements: the
-- statement-level notify triggers of V4 fire once per call, not once per item. Errors use the PD classes of V2.

-- Lease up to p_max_items activities, oldest first, with the eligibility, tag and session rules of fetch_work_item.
-- The n-th claimed item's token is p_token_prefix || '.' || n. The reply is bounded by p_max_bytes, the sum of the
-- returned items' work_item sizes: candidates are kept oldest first and the batch stops at the first that does not
-- fit, except that with p_first_free the very first item is kept even when it alone is larger (so an item bigger
-- than the bound can still be fetched). When the byte bound stopped the claim, a last row with a NULL token says so.
--
-- Session-bound items (only when p_owner is given) are claimed one session at a time with the single-item rules:
--   * the session's advisory lock is only tried: a session another fetcher is claiming from right now is left to it,
--     so a batch never waits on, nor deadlocks over, session locks;
--   * the session's items in the batch must be its oldest claimable items: the batch keeps them up to the first
--     claimable item of the session it does not hold, and releases the rest (FIFO within a session);
--   * the session lease is taken or refreshed for p_owner; a session another owner won since the search is dropped.
-- When items were dropped, the search runs again for the remaining capacity, skipping those sessions (8 rounds at
-- most), so an empty result means nothing eligible was claimable.
CREATE FUNCTION ${schema}.fetch_work_items(
    p_now BIGINT, p_lock_ms BIGINT, p_token_prefix TEXT, p_owner TEXT, p_session_lock_ms BIGINT,
    p_tag_mode INT, p_tags TEXT[], p_max_items INT, p_max_bytes BIGINT, p_first_free BOOLEAN)
RETURNS TABLE (token TEXT, item TEXT, attempts INT)
LANGUAGE plpgsql AS $$
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
BEGIN
    FOR v_round IN 1..8 LOOP
        EXIT WHEN cardinality(v_claimed) >= p_max_items OR v_full;

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
               SET lock_token = p_token_prefix || '.' || t.n, locked_until_ms = p_now + p_lock_ms,
                   attempt_count = q.attempt_count + 1
              FROM unnest(v_claimed) WITH ORDINALITY AS t(id, n)
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

-- Finish many leased activities in one transaction. One DELETE ... RETURNING over the tokens is the lease check:
-- a token whose row is gone (unknown, acked, cancelled, reclaimed by another worker) or whose lease had ended at
-- its own ack time (p_nows, the moment the runtime acked) is not deleted and gets its own answer, while the others
-- succeed. The completions of the deleted items go to their orchestrations' queues in one INSERT (list order), and
-- their live sessions are marked active (rows locked in session order, so concurrent flushes cannot deadlock on
-- them). A token given twice is acked once, at its first position.
-- One row per input position: acked, or else expired_ms = how long before its ack time the lease had ended
-- (NULL: no row holds the token).
CREATE FUNCTION ${schema}.ack_work_items(
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
BEGIN
    WITH req AS (
        SELECT DISTINCT ON (r.token) r.n::INT AS n, r.token, r.now_ms, r.instance_id, r.kind, r.completion
          FROM unnest(p_tokens, p_nows, p_instances, p_kinds, p_completions) WITH ORDINALITY
               AS r(token, now_ms, instance_id, kind, completion, n)
         ORDER BY r.token, r.n),
    deleted AS (
        -- Every token is looked up by the unique index on lock_token (a nested loop: hash and merge joins are off
        -- for this function), never by scanning the leased rows; the lease test is written so that it cannot
        -- drive an index.
        DELETE FROM ${schema}.worker_queue w USING req r
         WHERE w.lock_token = r.token AND w.locked_until_ms - r.now_ms > 0
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

    RETURN QUERY
    SELECT r.n::INT, r.n::INT = ANY (v_done),
           CASE WHEN r.n::INT = ANY (v_done) THEN NULL
                ELSE (SELECT r.now_ms - w.locked_until_ms FROM ${schema}.worker_queue w
                       WHERE w.lock_token = r.token AND r.now_ms - w.locked_until_ms >= 0) END
      FROM unnest(p_tokens, p_nows) WITH ORDINALITY AS r(token, now_ms, n)
     ORDER BY r.n;
END
$$;

-- Enqueue many activities in list order (identity ids follow the list). Returns how many were stored.
CREATE FUNCTION ${schema}.enqueue_worker_items(
    p_items TEXT[], p_now BIGINT, p_instances TEXT[], p_executions BIGINT[], p_activities BIGINT[],
    p_sessions TEXT[], p_tags TEXT[])
RETURNS INT
LANGUAGE sql AS $$
    WITH stored AS (
        INSERT INTO ${schema}.worker_queue (work_item, visible_at_ms, created_at_ms, instance_id, execution_id,
                                            activity_id, session_id, tag)
        SELECT r.item, p_now, p_now, r.instance_id, r.execution_id, r.activity_id, r.session_id, r.tag
          FROM unnest(p_items, p_instances, p_executions, p_activities, p_sessions, p_tags) WITH ORDINALITY
               AS r(item, instance_id, execution_id, activity_id, session_id, tag, n)
         ORDER BY r.n
        RETURNING 1)
    SELECT count(*)::INT FROM stored;
$$;

-- Enqueue many orchestrator messages in list order, each visible at its own time. Returns how many were stored.
CREATE FUNCTION ${schema}.enqueue_orchestrator_items(
    p_instances TEXT[], p_kinds TEXT[], p_items TEXT[], p_visible_at BIGINT[], p_now BIGINT)
RETURNS INT
LANGUAGE sql AS $$
    WITH stored AS (
        INSERT INTO ${schema}.orchestrator_queue (instance_id, kind, work_item, visible_at_ms, created_at_ms)
        SELECT r.instance_id, r.kind, r.item, r.visible_at, p_now
          FROM unnest(p_instances, p_kinds, p_items, p_visible_at) WITH ORDINALITY
               AS r(instance_id, kind, item, visible_at, n)
         ORDER BY r.n
        RETURNING 1)
    SELECT count(*)::INT FROM stored;
$$;
