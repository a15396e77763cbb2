-- Fewer round trips for a busy worker: the ack of its finished activity and the claim of its next one in one call,
-- one transaction (docs/batching.md, "Ack and fetch the next"). Each half is the existing function, unchanged, so
-- the semantics are exactly those of ack_work_item followed by fetch_work_item: when the ack raises (an expired or
-- unknown token) nothing is claimed and nothing is deleted. Both halves run at the same application time p_now.
-- The provider's write mark (provider_write, V8) wraps p_now like every other write.
CREATE FUNCTION ${schema}.ack_and_fetch_work_item(
    p_token TEXT, p_now BIGINT, p_instance TEXT, p_kind TEXT, p_completion TEXT,
    p_lock_ms BIGINT, p_next_token TEXT, p_owner TEXT, p_session_lock_ms BIGINT, p_tag_mode INT, p_tags TEXT[])
RETURNS TABLE (work_item TEXT, attempt_count INT)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ${schema}.ack_work_item(p_token, p_now, p_instance, p_kind, p_completion);
    RETURN QUERY SELECT f.work_item, f.attempt_count
                   FROM ${schema}.fetch_work_item(p_now, p_lock_ms, p_next_token, p_owner, p_session_lock_ms,
                                                  p_tag_mode, p_tags) f;
END
$$;

-- The write mark of a claim (a fetch of either queue): provider_write's, and the claim's transaction commits
-- without waiting for its WAL flush (synchronous_commit off for this transaction only). A claim is a lease, soft
-- state that the contract already lets expire: should the server crash before the flush, the claim is lost and
-- its item or instance is claimable again, exactly as after a lease expiry; the worker holding it then finds its
-- token invalid at its ack, which stays a synchronous commit (as do enqueues, turn acks and worker acks). The
-- flush wait was half of a claim's time (docs/benchmarks.md, drain). PgBouncer-safe: transaction-local.
CREATE FUNCTION ${schema}.provider_claim(p_now BIGINT, p_origin TEXT, p_announced BOOLEAN)
RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN ${schema}.provider_write(p_now, p_origin, p_announced);
END
$$;

-- Long polling's two read-only questions, unchanged in what they answer, in PL/pgSQL: a LANGUAGE sql function that
-- is not inlined is planned again on every call, and since issue 12 these run on every due lease end (docs/
-- long-polling.md, "Lease ends are verified"), where their time is the crash path's delay. PL/pgSQL keeps the plans.
CREATE OR REPLACE FUNCTION ${schema}.claimable_now(p_now BIGINT)
RETURNS TABLE (kind TEXT, at_ms BIGINT, n BIGINT, untagged BOOLEAN, tags TEXT[], sessions BOOLEAN)
LANGUAGE plpgsql STABLE
SET lock_timeout = '200ms'
AS $$
BEGIN
    RETURN QUERY
    SELECT 'o'::TEXT, p_now, count(DISTINCT c.instance_id), TRUE, NULL::TEXT[], FALSE
      FROM (SELECT q.instance_id
              FROM ${schema}.orchestrator_queue q
             WHERE q.visible_at_ms <= p_now
               AND (q.lock_token IS NULL OR q.locked_until_ms <= p_now)
               AND NOT EXISTS (SELECT 1 FROM ${schema}.instance_locks l
                                WHERE l.instance_id = q.instance_id AND l.locked_until_ms > p_now)
             ORDER BY q.visible_at_ms, q.id
             LIMIT 64) c
    HAVING count(*) > 0
    UNION ALL
    SELECT 'w'::TEXT, p_now, count(*), bool_or(c.tag IS NULL),
           COALESCE(array_agg(DISTINCT c.tag) FILTER (WHERE c.tag IS NOT NULL), '{}'), bool_or(c.session_id IS NOT NULL)
      FROM (SELECT w.tag, w.session_id
              FROM ${schema}.worker_queue w
             WHERE w.visible_at_ms <= p_now AND (w.lock_token IS NULL OR w.locked_until_ms <= p_now)
             ORDER BY w.id
             LIMIT 64) c
    HAVING count(*) > 0;
END
$$;

CREATE OR REPLACE FUNCTION ${schema}.next_deadlines(p_now BIGINT, p_limit INT)
RETURNS TABLE (kind TEXT, at_ms BIGINT, n BIGINT, untagged BOOLEAN, tags TEXT[], sessions BOOLEAN)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT * FROM ${schema}.claimable_now(p_now)
    UNION ALL
    (SELECT 'o'::TEXT, q.visible_at_ms, 1::BIGINT, TRUE, NULL::TEXT[], FALSE FROM ${schema}.orchestrator_queue q
      WHERE q.visible_at_ms > p_now ORDER BY q.visible_at_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'o'::TEXT, l.locked_until_ms, 0::BIGINT, TRUE, NULL::TEXT[], FALSE FROM ${schema}.instance_locks l
      WHERE l.locked_until_ms > p_now ORDER BY l.locked_until_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w'::TEXT, w.visible_at_ms, 1::BIGINT, w.tag IS NULL,
            CASE WHEN w.tag IS NULL THEN '{}'::TEXT[] ELSE ARRAY[w.tag] END, w.session_id IS NOT NULL
       FROM ${schema}.worker_queue w
      WHERE w.lock_token IS NULL AND w.visible_at_ms > p_now ORDER BY w.visible_at_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w'::TEXT, w.locked_until_ms, 0::BIGINT, w.tag IS NULL,
            CASE WHEN w.tag IS NULL THEN '{}'::TEXT[] ELSE ARRAY[w.tag] END, w.session_id IS NOT NULL
       FROM ${schema}.worker_queue w
      WHERE w.lock_token IS NOT NULL AND w.locked_until_ms > p_now ORDER BY w.locked_until_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w'::TEXT, s.locked_until_ms, 0::BIGINT, TRUE, NULL::TEXT[], TRUE FROM ${schema}.sessions s
      WHERE s.locked_until_ms > p_now ORDER BY s.locked_until_ms LIMIT p_limit);
END
$$;
