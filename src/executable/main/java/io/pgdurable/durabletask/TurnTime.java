package io.pgdurable.durabletask;

import io.pgdurable.durabletask.protocol.OrchestratorService.HistoryEvent;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * The time a turn starts at, the OrchestratorStarted event's time. The worker takes it as "now" and re-arms a timer
 * that has not strictly passed its due time, so it is never at or before the due time of a timer the turn delivers.
 */
final class TurnTime {
    private TurnTime() {}

    /** The start time of {@code t} when the clock reads {@code now}. */
    static Instant of(Turn t, Instant now) {
        List<Instant> firedDue = new ArrayList<>();
        for (HistoryEvent e : t.fresh) {
            if (e.hasTimerFired()) {
                Instant due = t.timerDue.get(e.getTimerFired().getTimerId());
                if (due != null) {
                    firedDue.add(due);
                }
            }
        }
        return after(now, firedDue);
    }

    /**
     * {@code now}, or the first time after every due time in {@code firedDue} as the worker reads it. The worker
     * reads the time to the millisecond (durabletask-java truncates), so "after" must hold at that resolution: since
     * timers are claimed ahead, a turn often starts within the due time's own millisecond, and a time one
     * microsecond after the due time reads as the due time itself.
     */
    static Instant after(Instant now, Iterable<Instant> firedDue) {
        Instant time = now;
        for (Instant due : firedDue) {
            if (!time.truncatedTo(ChronoUnit.MILLIS).isAfter(due)) {
                time = due.truncatedTo(ChronoUnit.MILLIS).plusMillis(1);
            }
        }
        return time;
    }
}
