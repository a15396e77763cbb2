package io.pgdurable.durabletask;

import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;

/**
 * Logs a repeating failure without flooding: the first of a streak as WARN, then at most one WARN per interval with
 * the count since the last one, the rest at DEBUG; {@link #recovered} ends the streak with an INFO.
 */
final class FailureLog {
    private static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final Logger log;
    private final String what;
    private long lastWarn;
    private int suppressed;
    private boolean inStreak;

    FailureLog(Logger log, String what) {
        this.log = log;
        this.what = what;
    }

    synchronized void failed(Throwable e) {
        long now = System.nanoTime();
        if (!inStreak || now - lastWarn >= INTERVAL_NANOS) {
            log.warn("{} failed{}: {}", what, suppressed > 0 ? " (" + suppressed + " more times since the last warning)"
                    : "", e.toString());
            inStreak = true;
            lastWarn = now;
            suppressed = 0;
        } else {
            suppressed++;
            log.debug("{} failed again: {}", what, e.toString());
        }
    }

    synchronized void recovered() {
        if (inStreak) {
            log.info("{} works again", what);
            inStreak = false;
            suppressed = 0;
        }
    }
}
