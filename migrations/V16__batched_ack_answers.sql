-- The batched ack of V6 answers its positions without a quadratic test (issue 12, docs/benchmarks.md "runs N1–N3").
--
-- V6 answered each input position with `n = ANY (acked positions)`, twice per position: quadratic in the flush size,
-- measured at 8–9 % of a 100-ack call and 35–39 % of a 1,000-ack call. The acked positions now mark a boolean array once,
-- and when every position was acked (the common case: a flush of live leases) the answer is built without looking
-- at the queue again. What is deleted, routed and answered is unchanged: same statement, same lease test, same
-- order of session locks, a token given twice acked once at its first position.
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

    IF v_count = 0 THEN
        RETURN;
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
                       WHERE w.lock_token = r.token AND r.now_ms - w.locked_until_ms >= 0) END
      FROM unnest(p_tokens, p_nows) WITH ORDINALITY AS r(token, now_ms, n)
     ORDER BY r.n;
END
$$;
