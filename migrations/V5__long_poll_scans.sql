-- Read-only questions long polling asks: what is claimable now (the one-second fallback probe) and when more becomes
-- claimable (timer scans after a reconnect, periodically, and when tracked deadlines overflowed).
-- Rows: kind 'o' or 'w', at_ms, n (instances for 'o', items for 'w'; 0 = a lease ends), untagged, tags, sessions.

-- Lease ends and delayed visibility are found by index, not by scanning the queues.
CREATE INDEX instance_locks_until_idx ON ${schema}.instance_locks (locked_until_ms);
CREATE INDEX worker_queue_leased_until_idx ON ${schema}.worker_queue (locked_until_ms) WHERE lock_token IS NOT NULL;
CREATE INDEX worker_queue_visible_idx ON ${schema}.worker_queue (visible_at_ms) WHERE lock_token IS NULL;
CREATE INDEX sessions_until_idx ON ${schema}.sessions (locked_until_ms);

-- What is claimable at p_now, counted up to 64 per queue. The function-level lock_timeout keeps the probe from
-- queueing behind an exclusive lock.
CREATE FUNCTION ${schema}.claimable_now(p_now BIGINT)
RETURNS TABLE (kind TEXT, at_ms BIGINT, n BIGINT, untagged BOOLEAN, tags TEXT[], sessions BOOLEAN)
LANGUAGE sql STABLE
SET lock_timeout = '200ms'
AS $$
    SELECT 'o', p_now, count(DISTINCT c.instance_id), TRUE, NULL::TEXT[], FALSE
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
    SELECT 'w', p_now, count(*), bool_or(c.tag IS NULL),
           COALESCE(array_agg(DISTINCT c.tag) FILTER (WHERE c.tag IS NOT NULL), '{}'), bool_or(c.session_id IS NOT NULL)
      FROM (SELECT w.tag, w.session_id
              FROM ${schema}.worker_queue w
             WHERE w.visible_at_ms <= p_now AND (w.lock_token IS NULL OR w.locked_until_ms <= p_now)
             ORDER BY w.id
             LIMIT 64) c
    HAVING count(*) > 0;
$$;

-- claimable_now plus the earliest p_limit future times of each kind: delayed messages and items, orchestration
-- and activity lease ends, session lease ends.
CREATE FUNCTION ${schema}.next_deadlines(p_now BIGINT, p_limit INT)
RETURNS TABLE (kind TEXT, at_ms BIGINT, n BIGINT, untagged BOOLEAN, tags TEXT[], sessions BOOLEAN)
LANGUAGE sql STABLE AS $$
    SELECT * FROM ${schema}.claimable_now(p_now)
    UNION ALL
    (SELECT 'o', q.visible_at_ms, 1, TRUE, NULL::TEXT[], FALSE FROM ${schema}.orchestrator_queue q
      WHERE q.visible_at_ms > p_now ORDER BY q.visible_at_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'o', l.locked_until_ms, 0, TRUE, NULL::TEXT[], FALSE FROM ${schema}.instance_locks l
      WHERE l.locked_until_ms > p_now ORDER BY l.locked_until_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w', w.visible_at_ms, 1, w.tag IS NULL, CASE WHEN w.tag IS NULL THEN '{}' ELSE ARRAY[w.tag] END,
            w.session_id IS NOT NULL
       FROM ${schema}.worker_queue w
      WHERE w.lock_token IS NULL AND w.visible_at_ms > p_now ORDER BY w.visible_at_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w', w.locked_until_ms, 0, w.tag IS NULL, CASE WHEN w.tag IS NULL THEN '{}' ELSE ARRAY[w.tag] END,
            w.session_id IS NOT NULL
       FROM ${schema}.worker_queue w
      WHERE w.lock_token IS NOT NULL AND w.locked_until_ms > p_now ORDER BY w.locked_until_ms LIMIT p_limit)
    UNION ALL
    (SELECT 'w', s.locked_until_ms, 0, TRUE, NULL::TEXT[], TRUE FROM ${schema}.sessions s
      WHERE s.locked_until_ms > p_now ORDER BY s.locked_until_ms LIMIT p_limit);
$$;
