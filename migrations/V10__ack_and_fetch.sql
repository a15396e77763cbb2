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
