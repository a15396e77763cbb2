package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import io.pgdurable.longpoll.QueueKind;
import io.pgdurable.longpoll.WakeSource;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fallback probe: once per fallback interval, while any fetch sits idle, one cheap statement asks what is
 * claimable now, on the probe's own thread, whatever the listener and the timer scans are doing (a stalled scan or
 * a reconnect never holds it up). At most one probe is out at a time.
 */
final class FallbackProbe {
    private static final Logger LOG = LoggerFactory.getLogger(FallbackProbe.class);

    private final WorkScanner scanner;
    private final WaiterRegistry registry;
    private final DeadlineTimer deadlines;
    private final Clock clock;
    private final LongPollSignals signals;
    private final ExecutorService probes;
    private final BooleanSupplier closed;
    private final AtomicBoolean probeRunning = new AtomicBoolean();

    FallbackProbe(WorkScanner scanner, WaiterRegistry registry, DeadlineTimer deadlines, Clock clock,
                  LongPollSignals signals, ExecutorService probes, BooleanSupplier closed) {
        this.scanner = scanner;
        this.registry = registry;
        this.deadlines = deadlines;
        this.clock = clock;
        this.signals = signals;
        this.probes = probes;
        this.closed = closed;
    }

    /** One tick of the fallback interval: probes when a fetch is idle and no probe is out. */
    void tick() {
        if (closed.getAsBoolean()
                || !(registry.anyIdle(QueueKind.ORCHESTRATOR) || registry.anyIdle(QueueKind.WORKER))) {
            return;
        }
        if (!probeRunning.compareAndSet(false, true)) {
            return; // the previous probe is still out; it reports when it returns
        }
        try {
            probes.execute(() -> {
                try {
                    List<Hint> hints = scanner.probe(clock.millis());
                    signals.fallbackPoll();
                    hints.forEach(h -> deadlines.route(h.queue() == QueueKind.ORCHESTRATOR ? toEveryIdle(h) : h,
                            WakeSource.PROBE));
                } catch (RuntimeException e) {
                    LOG.debug("pgdurable: fallback probe failed", e);
                } finally {
                    probeRunning.set(false);
                }
            });
        } catch (RejectedExecutionException closing) {
            probeRunning.set(false);
        }
    }

    /**
     * An orchestration the probe finds claimable (it skips locked instances) while fetches sit idle was missed by
     * every earlier wake: typically the waiters it reached cannot take it (a dispatcher's version filter, which
     * routes cannot see), and a hint for "one instance" would go to the same oldest waiter again each second while
     * a capable one waits out its poll timeout. So the probe's orchestrator hint reaches every idle waiter, at
     * most once per fallback interval.
     */
    private static Hint toEveryIdle(Hint h) {
        // Marked as passed on already: it reaches every idle fetch, so one that cannot use it has nobody to pass it
        // to, and its failure says nothing about that fetch's own wakes.
        return new Hint(h.queue(), h.atMs(), Integer.MAX_VALUE, h.untagged(), h.tags(), h.sessions(), 1);
    }

    /** Stops the probe's thread; a probe in flight is interrupted. */
    void close() {
        probes.shutdownNow();
    }
}
