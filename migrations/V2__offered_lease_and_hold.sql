-- Hand-over across processes with a short offered lease (docs/long-polling.md "Hand-over across processes"): the
-- offering enqueue leases an item for at most p_offer_ms and the taker holds it for its fetch's lock time once it has
-- the item, so an item whose taker never heard the notification is claimable again soon.

DROP FUNCTION ${schema}.enqueue_worker_item_offered(
    TEXT, BIGINT, TEXT, BIGINT, BIGINT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT[]);

-- enqueue_worker_item, offered to a parked fetch of another process first. An untagged item without a session whose
-- notification fits (PostgreSQL refuses payloads of 8000 bytes and more) is written leased to p_token, attempt 1,
-- and sent on p_channel as
--     h|<taker origin>|<token>|<lock ms>|<leased until ms>|<held until ms>|<item>
-- The fetch's lease ends at <leased until> (its lock time from p_now), but the row is leased only until <held until>
-- (at most p_offer_ms from p_now) until the taker holds it for the rest (hold_handed_over_items): should the taker's
-- listener die before it reads the notification, the item is claimable again after that short time, not after a
-- whole lock time.
-- Returns the taker's origin; NULL when the item was written unleased, its announcement p_inline (may be NULL) then
-- notified here as the plain enqueue's notifying form would. Never offers to p_origin (the writer's own fetches take
-- its items in-process). An enqueue that can take a taker's liveness key (shared) knows nobody holds it: it removes
-- the row and moves on.
CREATE FUNCTION ${schema}.enqueue_worker_item_offered(
    p_item TEXT, p_now BIGINT, p_instance TEXT, p_execution_id BIGINT, p_activity_id BIGINT,
    p_session TEXT, p_tag TEXT, p_origin TEXT, p_token TEXT, p_channel TEXT, p_inline TEXT[], p_offer_ms BIGINT)
RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_taker   RECORD;
    v_held_ms BIGINT;
    v_payload TEXT;
BEGIN
    IF p_session IS NULL AND p_tag IS NULL THEN
        FOR v_taker IN
            SELECT f.origin, f.liveness_key, f.lock_ms
              FROM ${schema}.parked_fetches f
             WHERE f.waiting > 0 AND f.origin <> p_origin
             ORDER BY f.updated_at_ms
             LIMIT 4
               FOR UPDATE SKIP LOCKED
        LOOP
            IF pg_try_advisory_xact_lock_shared(v_taker.liveness_key) THEN
                -- Nobody holds the key: the taker's listener session is gone, so nobody would hear the item.
                DELETE FROM ${schema}.parked_fetches WHERE origin = v_taker.origin;
                CONTINUE;
            END IF;
            v_held_ms := LEAST(v_taker.lock_ms, p_offer_ms);
            v_payload := 'h|' || v_taker.origin || '|' || p_token || '|' || v_taker.lock_ms || '|'
                         || (p_now + v_taker.lock_ms) || '|' || (p_now + v_held_ms) || '|' || p_item;
            EXIT WHEN octet_length(v_payload) >= 8000;
            UPDATE ${schema}.parked_fetches SET waiting = waiting - 1 WHERE origin = v_taker.origin;
            PERFORM ${schema}.enqueue_worker_item_leased(p_item, p_now, p_instance, p_execution_id, p_activity_id,
                                                         NULL, NULL, p_token, v_held_ms);
            PERFORM pg_notify(p_channel, v_payload);
            RETURN v_taker.origin;
        END LOOP;
    END IF;
    PERFORM ${schema}.enqueue_worker_item(p_item, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag);
    PERFORM pg_notify(p_channel, p) FROM unnest(p_inline) AS p;
    RETURN NULL;
END
$$;


-- The taker's hold on the items handed to it (enqueue_worker_item_offered): each row still leased to its token gets
-- the lease end its fetch took. A row acked, released or claimed by another token since is left alone. A lease, like
-- a claim: the commit does not wait for its WAL flush (provider_claim). Returns how many rows it held.
CREATE FUNCTION ${schema}.hold_handed_over_items(p_tokens TEXT[], p_until BIGINT[], p_now BIGINT)
RETURNS INT
LANGUAGE plpgsql AS $$
DECLARE
    v_held INT;
BEGIN
    PERFORM ${schema}.provider_claim(p_now);
    UPDATE ${schema}.worker_queue w SET locked_until_ms = h.until_ms
      FROM unnest(p_tokens, p_until) AS h(token, until_ms)
     WHERE w.lock_token = h.token AND w.locked_until_ms < h.until_ms;
    GET DIAGNOSTICS v_held = ROW_COUNT;
    RETURN v_held;
END
$$;
