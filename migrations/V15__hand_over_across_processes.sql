-- Hand-over across processes (issue 12, docs/long-polling.md "Hand-over across processes"; opt-in,
-- handOverAcrossProcesses). A wake from another process ends in a claim on a connection that sat idle for the whole
-- wait, and on the machines measured that claim alone costs more than the whole wake may (docs/benchmarks.md). So a
-- process says here how many of its fetches are parked for untagged items without a session, and another process's
-- enqueue of such an item leases it to one of them in the enqueue's own transaction and sends it in the NOTIFY: the
-- parked fetch returns it without a claim.
--
-- A row is the parked process's own account (it writes absolute counts when they change); an enqueue that hands an
-- item over takes one off. A count that is too high costs a release (the process finds no fetch left for the item and
-- gives it back at once, the attempt not counted); too low, the item is announced and claimed as before. Whether the
-- process still lives is the advisory lock its listener's session holds on liveness_key: an enqueue that can take
-- that lock (shared) knows nobody holds it, removes the row and writes the item unleased.
--
-- The released functions are unchanged: these are new ones beside them, so nodes of earlier versions keep working.

CREATE TABLE ${schema}.parked_fetches (
    origin        TEXT PRIMARY KEY,
    liveness_key  BIGINT NOT NULL,
    waiting       INT NOT NULL CHECK (waiting >= 0),
    lock_ms       BIGINT NOT NULL CHECK (lock_ms > 0),
    updated_at_ms BIGINT NOT NULL
);

-- The parked process's account of its takers; waiting 0 keeps the row (the next park only updates it).
CREATE FUNCTION ${schema}.register_parked_fetches(
    p_origin TEXT, p_liveness_key BIGINT, p_waiting INT, p_lock_ms BIGINT, p_now BIGINT)
RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO ${schema}.parked_fetches (origin, liveness_key, waiting, lock_ms, updated_at_ms)
    VALUES (p_origin, p_liveness_key, p_waiting, p_lock_ms, p_now)
    ON CONFLICT (origin) DO UPDATE
       SET liveness_key = EXCLUDED.liveness_key, waiting = EXCLUDED.waiting, lock_ms = EXCLUDED.lock_ms,
           updated_at_ms = EXCLUDED.updated_at_ms;
$$;

CREATE FUNCTION ${schema}.unregister_parked_fetches(p_origin TEXT)
RETURNS VOID
LANGUAGE sql AS $$
    DELETE FROM ${schema}.parked_fetches WHERE origin = p_origin;
$$;

-- enqueue_worker_item, offered to a parked fetch of another process first. An untagged item without a session whose
-- notification fits (PostgreSQL refuses payloads of 8000 bytes and more) is written leased to p_token for the
-- taker's lock time, attempt 1, and sent on p_channel as
--     h|<taker origin>|<token>|<lock ms>|<leased until ms>|<item>
-- Returns the taker's origin; NULL when the item was written unleased, its announcement p_inline (may be NULL) then
-- notified here as the plain enqueue's notifying form would. Never offers to p_origin (the writer's own fetches take
-- its items in-process, V13).
CREATE FUNCTION ${schema}.enqueue_worker_item_offered(
    p_item TEXT, p_now BIGINT, p_instance TEXT, p_execution_id BIGINT, p_activity_id BIGINT,
    p_session TEXT, p_tag TEXT, p_origin TEXT, p_token TEXT, p_channel TEXT, p_inline TEXT[])
RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_taker   RECORD;
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
            v_payload := 'h|' || v_taker.origin || '|' || p_token || '|' || v_taker.lock_ms || '|'
                         || (p_now + v_taker.lock_ms) || '|' || p_item;
            EXIT WHEN octet_length(v_payload) >= 8000;
            UPDATE ${schema}.parked_fetches SET waiting = waiting - 1 WHERE origin = v_taker.origin;
            PERFORM ${schema}.enqueue_worker_item_leased(p_item, p_now, p_instance, p_execution_id, p_activity_id,
                                                         NULL, NULL, p_token, v_taker.lock_ms);
            PERFORM pg_notify(p_channel, v_payload);
            RETURN v_taker.origin;
        END LOOP;
    END IF;
    PERFORM ${schema}.enqueue_worker_item(p_item, p_now, p_instance, p_execution_id, p_activity_id, p_session, p_tag);
    PERFORM pg_notify(p_channel, p) FROM unnest(p_inline) AS p;
    RETURN NULL;
END
$$;
