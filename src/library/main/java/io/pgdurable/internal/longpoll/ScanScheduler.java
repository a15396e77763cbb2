package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.WakeSource;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs timer scans on its own thread, at most one at a time: after every (re)LISTEN, periodically, after deadlines
 * were dropped for capacity, and to verify due lease ends. Requests while a scan runs coalesce into one fresh scan
 * right after it; a failed scan is retried a cadence later.
 */
final class ScanScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(ScanScheduler.class);

    private final WorkScanner scanner;
    private final Clock clock;
    private final LongPollSignals signals;
    private final DeadlineTimer deadlines;
    private final LeaseEndVerification verification;
    private final Runnable doubtAnnouncements;
    private final ScheduledExecutorService timer;
    private final ExecutorService scans;
    private final int limit;
    private final long cadenceMs;
    private final BooleanSupplier closed;
    private final AtomicBoolean scanRunning = new AtomicBoolean();
    private final AtomicBoolean scanPending = new AtomicBoolean();

    /**
     * @param doubtAnnouncements run by every {@link #requestScan}: notifications may have been missed
     * @param scans              the scans' own thread; {@code timer} schedules the scans that follow a cadence later
     */
    ScanScheduler(WorkScanner scanner, Clock clock, LongPollSignals signals, LongPoller.Settings settings,
                  DeadlineTimer deadlines, LeaseEndVerification verification, Runnable doubtAnnouncements,
                  ScheduledExecutorService timer, ExecutorService scans, BooleanSupplier closed) {
        this.scanner = scanner;
        this.clock = clock;
        this.signals = signals;
        this.deadlines = deadlines;
        this.verification = verification;
        this.doubtAnnouncements = doubtAnnouncements;
        this.timer = timer;
        this.scans = scans;
        this.limit = settings.maxTrackedDeadlines();
        this.cadenceMs = settings.wakeCoalescing().toMillis();
        this.closed = closed;
    }

    /**
     * Asks for a timer scan. At most one runs at a time; a request while one runs (say, from before a reconnect's
     * LISTEN) schedules a fresh one right after it.
     */
    void requestScan() {
        if (closed.getAsBoolean()) {
            return;
        }
        // Asked after every (re)LISTEN, among others: notifications may have been missed, so no claim is skipped
        // on the strength of what was (not) announced before.
        doubtAnnouncements.run();
        startScan();
    }

    /**
     * A scan without doubting what was announced: a verification of due lease ends is a question about the
     * database, not about missed notifications, so it leaves the skipped-claim memory alone.
     */
    void startScan() {
        if (closed.getAsBoolean()) {
            return;
        }
        scanPending.set(true);
        if (!scanRunning.compareAndSet(false, true)) {
            return;
        }
        try {
            scans.execute(this::runScans);
        } catch (RejectedExecutionException closing) {
            scanRunning.set(false);
        }
    }

    /**
     * Runs the requested scans one after another. Each scan is a complete account of the database at its snapshot
     * (below the horizon of what it returned, see {@link ScanAnswer}), so it supersedes every lease end tracked
     * before it started: those are forgotten, and the scan's own answer (what is claimable now, the true future
     * lease ends) is routed instead. A lease end offered after the scan started is kept: its claim may have
     * committed after the snapshot. Deadlines are only ever offered after the commit they stand for, so one offered
     * before the mark stands for a commit the scan's snapshot sees.
     *
     * <p>Due lease ends ask the one-statement probe first whether anything is claimable now: it takes a fraction of
     * the scan's time, so a crashed holder's item is not kept waiting. When it found something, its wakes are out and
     * the scan follows a cadence later, so as not to compete with the claims just woken; when it found nothing (the
     * usual answer for stale lease ends), the scan runs at once.
     */
    private void runScans() {
        try {
            while (scanPending.getAndSet(false) && !closed.getAsBoolean()) {
                DeadlineTimer.ScanStart start = deadlines.scanStarts();
                LeaseEndVerification.Due verifying = start.verifying();
                if (!verifying.isEmpty() && verification.probe(verifying)) {
                    signals.leaseEndsVerified(0);
                    later(this::startScan);
                    continue;
                }
                long now = clock.millis();
                List<Hint> hints;
                try {
                    hints = scanner.scan(now, limit);
                } catch (RuntimeException e) {
                    LOG.debug("pgdurable: timer scan failed", e);
                    hints = null;
                }
                signals.scanFinished(hints == null);
                if (hints == null) {
                    verification.unverified(verifying);
                    later(this::requestScan);
                    continue;
                }
                int dropped = answered(start.mark(), now, hints);
                if (!verifying.isEmpty()) {
                    signals.leaseEndsVerified(dropped);
                }
            }
        } finally {
            scanRunning.set(false);
        }
        if (scanPending.get()) {
            startScan(); // a request raced the end of the loop
        }
    }

    /** Forgets what a scan answer supersedes, then routes it; returns how many tracked lease ends were forgotten. */
    private int answered(long mark, long now, List<Hint> hints) {
        int dropped = deadlines.forgetSuperseded(mark, ScanAnswer.of(now, limit, hints));
        hints.forEach(h -> deadlines.route(h, WakeSource.SCAN));
        if (deadlines.takeOverflow()) {
            requestScan(); // dropped deadlines the answer did not cover, and nothing left to fire before them
        }
        return dropped;
    }

    /**
     * Runs {@code scan} one cadence from now: a scan after the lease-end probe's wakes ({@link #startScan}: without
     * doubting what was announced), or the retry of a failed scan ({@link #requestScan}).
     */
    private void later(Runnable scan) {
        try {
            timer.schedule(scan, cadenceMs, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            // shutting down
        }
    }

    /** Stops the scan thread; a scan in flight is interrupted. */
    void close() {
        scans.shutdownNow();
    }
}
