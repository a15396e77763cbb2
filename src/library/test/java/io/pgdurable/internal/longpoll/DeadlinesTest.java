package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.QueueKind;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The bookkeeping behind lease-end verification, without a database: which tracked lease ends a scan answer
 * supersedes (those offered before it started, below its horizon), and when it may forget an overflow.
 */
class DeadlinesTest {
    private static Hint leaseEnd(QueueKind q, long at) {
        return new Hint(q, at, 0, true, Set.of(), false, 0);
    }

    private static Hint visible(QueueKind q, long at) {
        return new Hint(q, at, 1, true, Set.of(), false, 0);
    }

    @Test
    void a_scan_forgets_the_lease_ends_of_its_queue_offered_before_it_started_and_keeps_everything_else() {
        Deadlines d = new Deadlines(100);
        d.add(leaseEnd(QueueKind.WORKER, 1_000));
        d.add(leaseEnd(QueueKind.WORKER, 5_000));
        d.add(visible(QueueKind.WORKER, 2_000));
        d.add(leaseEnd(QueueKind.ORCHESTRATOR, 3_000));
        long mark = d.mark();
        d.add(leaseEnd(QueueKind.WORKER, 4_000)); // a claim after the scan started: its snapshot may not see it
        assertEquals(2, d.dropLeaseEnds(QueueKind.WORKER, mark, Long.MAX_VALUE));
        assertEquals(3, d.size());
        assertEquals(1, d.dropLeaseEnds(QueueKind.ORCHESTRATOR, mark, Long.MAX_VALUE));
        List<Long> left = new ArrayList<>();
        d.dueMicros(Long.MAX_VALUE).forEach(h -> left.add(h.atMs() * (h.count() == 0 ? 1 : -1)));
        assertEquals(List.of(-2_000L, 4_000L), left, "the visibility time and the later lease end are kept");
    }

    @Test
    void a_lead_moves_every_deadline_earlier_and_each_hint_keeps_its_own_time() {
        Deadlines d = new Deadlines(100, 1_500); // 1.5 ms
        d.add(leaseEnd(QueueKind.WORKER, 1_000));
        d.add(visible(QueueKind.ORCHESTRATOR, 1_001));
        assertEquals(998_500, d.earliestMicros(), "the lease end fires 1.5 ms early");
        assertTrue(d.dueMicros(998_499).isEmpty(), "nothing fires before its lead");
        assertEquals(List.of(1_000L), d.dueMicros(998_500).stream().map(Hint::atMs).toList(),
                "the hint keeps its own time: whatever acts on it waits for that time");
        assertEquals(999_500, d.earliestMicros(), "the visibility time fires 1.5 ms early");
        assertEquals(List.of(1_001L), d.dueMicros(999_500).stream().map(Hint::atMs).toList());
    }

    @Test
    void a_lease_end_whose_early_firing_is_below_the_horizon_but_whose_time_is_not_is_kept() {
        Deadlines d = new Deadlines(100, 1_500);
        d.add(leaseEnd(QueueKind.WORKER, 1_000)); // fires at 998.5 ms
        d.add(leaseEnd(QueueKind.WORKER, 3_001)); // fires at 2,999.5 ms, below a 3,000 ms horizon
        assertEquals(1, d.dropLeaseEnds(QueueKind.WORKER, d.mark(), 3_000));
        assertEquals(List.of(3_001L), d.dueMicros(Long.MAX_VALUE).stream().map(Hint::atMs).toList());
    }

    @Test
    void only_lease_ends_below_the_horizon_are_forgotten() {
        Deadlines d = new Deadlines(100);
        for (long at = 1_000; at <= 5_000; at += 1_000) {
            d.add(leaseEnd(QueueKind.WORKER, at));
        }
        assertEquals(2, d.dropLeaseEnds(QueueKind.WORKER, d.mark(), 3_000));
        assertEquals(3_000_000, d.earliestMicros(), "the one at the horizon may share its time with a row that was cut off");
    }

    @Test
    void an_overflow_is_forgotten_only_when_every_dropped_deadline_was_offered_before_the_mark() {
        Deadlines d = new Deadlines(2);
        d.add(leaseEnd(QueueKind.WORKER, 1_000));
        d.add(leaseEnd(QueueKind.WORKER, 2_000));
        d.add(leaseEnd(QueueKind.WORKER, 3_000)); // dropped for capacity
        long mark = d.mark();
        d.dropLeaseEnds(QueueKind.WORKER, mark, Long.MAX_VALUE);
        assertTrue(d.overflowed(), "nothing left and something was dropped");
        d.overflowCoveredBy(mark);
        assertFalse(d.overflowed(), "the scan that started after the drop answered for it");

        d.add(leaseEnd(QueueKind.WORKER, 1_000));
        d.add(leaseEnd(QueueKind.WORKER, 2_000));
        long early = d.mark();
        d.add(leaseEnd(QueueKind.WORKER, 500)); // evicts the 2,000 one, offered before the mark
        long late = d.mark();
        d.add(leaseEnd(QueueKind.WORKER, 3_000)); // dropped after the mark
        d.dropLeaseEnds(QueueKind.WORKER, late + 1, Long.MAX_VALUE);
        d.overflowCoveredBy(early);
        assertTrue(d.overflowed(), "a deadline dropped after the scan started is not covered by it");
        d.overflowCoveredBy(d.mark());
        assertFalse(d.overflowed());
    }

    @Test
    void a_scan_answer_is_complete_below_the_limit_th_earliest_time_of_a_kind_that_came_back_full() {
        long now = 100;
        List<Hint> rows = new ArrayList<>();
        rows.add(Hint.anything(QueueKind.WORKER, now, 3));
        rows.add(leaseEnd(QueueKind.WORKER, 400));
        rows.add(leaseEnd(QueueKind.WORKER, 200));
        rows.add(new Hint(QueueKind.WORKER, 300, 0, true, null, true, 0)); // a session lease
        rows.add(visible(QueueKind.ORCHESTRATOR, 900));
        ScanAnswer full = ScanAnswer.of(now, 3, rows);
        assertEquals(400, full.horizon(QueueKind.WORKER), "three lease ends at a limit of three");
        assertEquals(Long.MAX_VALUE, full.horizon(QueueKind.ORCHESTRATOR));
        assertFalse(full.complete());

        ScanAnswer roomy = ScanAnswer.of(now, 4, rows);
        assertTrue(roomy.complete());
        assertEquals(Long.MAX_VALUE, roomy.horizon(QueueKind.WORKER));

        ScanAnswer claimable = ScanAnswer.of(now, 1, List.of(Hint.anything(QueueKind.WORKER, now, Hint.SCAN_CAP)));
        assertTrue(claimable.complete(), "what is claimable now is counted, not cut off");
    }
}
