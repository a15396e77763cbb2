package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The bookkeeping behind deferred local wakes (no database: it is pure in-memory state). */
class TurnsInProgressTest {

    @Test
    void a_message_during_a_turn_is_deferred_to_that_turns_end_once() {
        TurnsInProgress turns = new TurnsInProgress();
        assertFalse(turns.defer("x", 0), "no turn: wake at once");
        turns.started("x", "t1", 100, 0);
        assertFalse(turns.end("unknown"), "an unknown token ends nothing");
        assertTrue(turns.defer("x", 50));
        assertTrue(turns.defer("x", 60), "a second message joins the same deferral");
        assertFalse(turns.defer("y", 60), "another instance is not held");
        assertTrue(turns.end("t1"), "the end gives the deferred wake");
        assertFalse(turns.end("t1"), "only once");
        assertFalse(turns.defer("x", 70), "after the end, messages wake at once");
        assertEquals(0, turns.size());
    }

    @Test
    void a_turn_with_nothing_deferred_ends_without_a_wake() {
        TurnsInProgress turns = new TurnsInProgress();
        turns.started("x", "t1", 100, 0);
        assertFalse(turns.end("t1"));
    }

    @Test
    void an_expired_lease_defers_nothing() {
        TurnsInProgress turns = new TurnsInProgress();
        turns.started("x", "t1", 100, 0);
        assertFalse(turns.defer("x", 100), "the lease ended at 100: the lease-end deadline wakes, not the turn");
        assertFalse(turns.end("t1"));
    }

    @Test
    void a_renewal_extends_the_deferral_window() {
        TurnsInProgress turns = new TurnsInProgress();
        turns.started("x", "t1", 100, 0);
        turns.renewed("t1", 300);
        turns.renewed("other", 900);
        assertTrue(turns.defer("x", 200));
        assertTrue(turns.end("t1"));
    }

    @Test
    void a_newer_turn_on_the_instance_owns_the_deferral() {
        TurnsInProgress turns = new TurnsInProgress();
        turns.started("x", "t1", 100, 0);
        turns.started("x", "t2", 500, 150); // t1's lease ran out and this provider claimed the instance again
        assertTrue(turns.defer("x", 200));
        assertFalse(turns.end("t1"), "the old token's late ack does not take the newer turn's wake");
        assertTrue(turns.end("t2"));
    }

    @Test
    void turns_never_ended_are_swept_once_expired() {
        TurnsInProgress turns = new TurnsInProgress();
        for (int i = 0; i < TurnsInProgress.SWEEP_ABOVE; i++) {
            turns.started("lost-" + i, "t" + i, 100, 0);
        }
        turns.started("live", "t-live", 1_000, 500);
        assertEquals(1, turns.size(), "only the live turn is left");
        assertTrue(turns.defer("live", 600));
        assertTrue(turns.end("t-live"));
    }
}
