package io.pgdurable.internal.longpoll;

import io.pgdurable.longpoll.LongPollSignals;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one {@link NotificationListener} session alive: opens it, hands its notifications on, and after a loss
 * closes it and reconnects with capped, jittered exponential backoff.
 *
 * <p>One daemon thread, {@code pgdurable-notifier-<channel>}, runs the cycle. After each successful open it calls
 * {@link LongPollSignals#listening} and then {@code onListening}: the owner starts its catch-up scan from there,
 * so the order is always LISTEN first, then scan (rule 8). {@code onListening} runs on the notifier thread and
 * should return quickly (start the scan or hand it off). Notifications go to
 * {@link LongPollSignals#notification} and then {@code onNotification}, on the driver's thread; both must return
 * quickly.
 *
 * <p>Backoff: the first retry after a failure waits about 75 ms (±20 % jitter), each further consecutive failure
 * doubles it, up to 0.8 s. A session that lived at least {@value #STABLE_SESSION_MILLIS} ms resets the streak, so a
 * connection that dies right after LISTEN (a flapping server, a proxy that cuts it) cannot cause a reconnect storm.
 *
 * <p>Logging without storms: the first failure of a streak is a WARN, further ones at most one WARN per 30 s with
 * the count since the last one (the rest at DEBUG), and an INFO when listening again after a warned failure. Log
 * lines name the channel and the driver's error, never the URL or credentials.
 *
 * <p>{@link #close()} returns within about 2 s in every state, also when the socket is wedged.
 */
public final class Notifier implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Notifier.class);

    static final long FIRST_RETRY_MILLIS = 75;
    /**
     * Below one second so that the listener is back within a second of the server, yet a server that
     * stays down sees at most about one attempt a second from each process.
     */
    static final long MAX_RETRY_MILLIS = 800;
    static final double JITTER = 0.2;
    static final long STABLE_SESSION_MILLIS = 3_000;
    static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long CLOSE_BUDGET_MILLIS = 1_800;

    private final NotificationListener listener;
    private final String channel;
    private final Duration heartbeat;
    private final Consumer<String> onNotification;
    private final Runnable onListening;
    private final LongPollSignals signals;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closeCalled = new AtomicBoolean();
    private volatile boolean closed;
    private volatile boolean listening;
    private volatile Thread thread;
    private volatile NotificationListener.Session current;

    // Logging state; touched only by the notifier thread.
    private long lastWarnNanos;
    private int failuresSinceWarn;
    private boolean announceRecovery;
    private long streakStartNanos;

    public Notifier(NotificationListener listener, String channel, Duration heartbeat,
            Consumer<String> onNotification, Runnable onListening, LongPollSignals signals) {
        this.listener = Objects.requireNonNull(listener, "listener");
        this.channel = Objects.requireNonNull(channel, "channel");
        this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
        if (heartbeat.isNegative() || heartbeat.isZero()) {
            throw new IllegalArgumentException("heartbeat must be positive");
        }
        this.onNotification = Objects.requireNonNull(onNotification, "onNotification");
        this.onListening = Objects.requireNonNull(onListening, "onListening");
        this.signals = signals == null ? LongPollSignals.NONE : signals;
    }

    /** Starts the notifier thread; returns at once (see {@link LongPollSignals#listening} for when LISTEN is up). */
    public void start() {
        if (closed) {
            throw new IllegalStateException("notifier for channel " + channel + " is closed");
        }
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException("notifier for channel " + channel + " was already started");
        }
        Thread t = new Thread(this::run, "pgdurable-notifier-" + channel);
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    /** Whether a session is up with LISTEN active right now. */
    public boolean isListening() {
        return listening && !closed;
    }

    /** The advisory lock key the current session holds while it lives; 0 when not listening or it holds none. */
    public long livenessKey() {
        NotificationListener.Session s = current;
        return s != null && isListening() ? s.livenessKey() : 0;
    }

    /** The server process id of the current session ({@link NotificationListener.Session#backendPid}), or 0. */
    public int listenerPid() {
        NotificationListener.Session s = current;
        return s != null && isListening() ? s.backendPid() : 0;
    }

    /** The channel this notifier LISTENs on. */
    public String channel() {
        return channel;
    }

    /**
     * The wait before retry number {@code failures} (1 for the first retry): 75 ms doubled per further failure,
     * capped at 0.8 s, with ±20 % jitter (never above the cap).
     */
    static Duration backoffDelay(int failures) {
        int exponent = Math.max(0, Math.min(failures - 1, 20));
        long nominal = Math.min(MAX_RETRY_MILLIS, FIRST_RETRY_MILLIS << exponent);
        double factor = 1 + JITTER * (2 * ThreadLocalRandom.current().nextDouble() - 1);
        long millis = Math.min(MAX_RETRY_MILLIS, Math.max(1, Math.round(nominal * factor)));
        return Duration.ofMillis(millis);
    }

    private void run() {
        int failures = 0;
        boolean listenedBefore = false;
        try {
            while (!closed) {
                SessionEvents events = new SessionEvents();
                NotificationListener.Session session;
                try {
                    session = listener.open(channel, heartbeat, events);
                } catch (SQLException | RuntimeException | Error e) {
                    // Errors too: a JVM out of threads ("unable to create native thread") or a driver class that
                    // fails to load must not end this thread, or the process would never LISTEN again and fall
                    // back to polling for good; they are retried with backoff like any failed connect.
                    if (e instanceof Error && !(e instanceof VirtualMachineError || e instanceof LinkageError)) {
                        throw (Error) e;
                    }
                    if (closed) {
                        break;
                    }
                    failures++;
                    logFailure("could not LISTEN", e, failures);
                    if (!pause(failures)) {
                        break;
                    }
                    continue;
                }
                current = session;
                if (closed) {
                    break; // close() may not have seen the session: the finally block closes it
                }
                long openedAt = System.nanoTime();
                listening = true;
                logListening(failures, openedAt);
                boolean reconnect = listenedBefore;
                emit(() -> signals.listening(reconnect));
                listenedBefore = true;
                try {
                    onListening.run();
                } catch (RuntimeException e) {
                    LOG.warn("onListening callback for channel {} failed: {}", channel, e.toString());
                    LOG.debug("onListening failure", e);
                }
                Throwable cause = awaitLoss(events);
                listening = false;
                current = null;
                if (cause != null) {
                    emit(() -> signals.connectionLost(cause));
                }
                session.close();
                if (cause == null || closed) {
                    break;
                }
                if (TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - openedAt) >= STABLE_SESSION_MILLIS) {
                    failures = 0;
                }
                failures++;
                logFailure("lost its connection", cause, failures);
                if (!pause(failures)) {
                    break;
                }
            }
        } catch (RuntimeException | Error e) {
            LOG.error("notifier thread for channel {} stopped unexpectedly", channel, e);
            throw e;
        } finally {
            listening = false;
            NotificationListener.Session s = current;
            current = null;
            if (s != null) {
                s.close();
            }
        }
    }

    /** Waits until the session is lost (returns the cause) or the notifier is closed (returns null). */
    private Throwable awaitLoss(SessionEvents events) {
        lock.lock();
        try {
            while (!closed && events.lost == null) {
                try {
                    changed.await(1, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    // only close() interrupts this thread; the loop condition decides
                }
            }
            return closed ? null : events.lost;
        } finally {
            lock.unlock();
        }
    }

    /** Emits the backoff signal and waits; returns false when closed meanwhile. */
    private boolean pause(int failures) {
        Duration delay = backoffDelay(failures);
        emit(() -> signals.backoff(failures, delay));
        long deadline = System.nanoTime() + delay.toNanos();
        lock.lock();
        try {
            while (!closed) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return true;
                }
                try {
                    changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    // only close() interrupts this thread; the loop condition decides
                }
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    private void logFailure(String what, Throwable cause, int failures) {
        long now = System.nanoTime();
        if (failures == 1) {
            streakStartNanos = now;
            lastWarnNanos = now;
            failuresSinceWarn = 0;
            announceRecovery = true;
            LOG.warn("long-poll listener on channel {} {}: {}; reconnecting with backoff", channel, what,
                    describe(cause));
        } else if (now - lastWarnNanos >= WARN_INTERVAL_NANOS) {
            int since = failuresSinceWarn + 1;
            lastWarnNanos = now;
            failuresSinceWarn = 0;
            announceRecovery = true;
            LOG.warn("long-poll listener on channel {} still failing: {} failures in a row over {} s ({} since the "
                    + "last warning); last: {} {}", channel, failures,
                    TimeUnit.NANOSECONDS.toSeconds(now - streakStartNanos), since, what, describe(cause));
        } else {
            failuresSinceWarn++;
            LOG.debug("long-poll listener on channel {} {} (failure {} in a row): {}", channel, what, failures,
                    describe(cause));
        }
        LOG.debug("listener failure detail", cause);
    }

    private void logListening(int failures, long now) {
        if (failures > 0 && announceRecovery) {
            announceRecovery = false;
            LOG.info("long-poll listener on channel {} is listening again after {} failure(s) in {} ms", channel,
                    failures, TimeUnit.NANOSECONDS.toMillis(now - streakStartNanos));
        } else {
            LOG.debug("long-poll listener on channel {} is listening", channel);
        }
    }

    private static String describe(Throwable cause) {
        if (cause == null) {
            return "unknown cause";
        }
        String state = cause instanceof SQLException ? ((SQLException) cause).getSQLState() : null;
        String message = cause.getMessage();
        return cause.getClass().getSimpleName() + (state == null ? "" : " [" + state + "]")
                + (message == null ? "" : ": " + message);
    }

    private void emit(Runnable signal) {
        try {
            signal.run();
        } catch (RuntimeException e) {
            LOG.debug("long-poll signal failed", e);
        }
    }

    /**
     * Stops the thread and closes the session; returns within about 2 s even when the socket is wedged (an
     * unresponsive driver call is abandoned on its daemon thread). Idempotent.
     */
    @Override
    public void close() {
        if (!closeCalled.compareAndSet(false, true)) {
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_BUDGET_MILLIS);
        closed = true;
        listening = false;
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
        NotificationListener.Session s = current;
        if (s != null) {
            s.close(); // bounded by the session (about a second); the thread's own close is then a no-op
        }
        if (t != null && t != Thread.currentThread()) {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                try {
                    t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (t.isAlive()) {
                LOG.debug("notifier thread for channel {} did not stop within {} ms; abandoned", channel,
                        CLOSE_BUDGET_MILLIS);
            }
        }
    }

    @Override
    public String toString() {
        return "Notifier[" + channel + (isListening() ? ", listening" : "") + (closed ? ", closed" : "") + "]";
    }

    /** Where one session reports. */
    private final class SessionEvents implements NotificationListener.Events {
        /** Guarded by {@link #lock} for writes; read under the lock by the notifier thread. */
        private volatile Throwable lost;

        @Override
        public void notification(String payload) {
            if (closed) {
                return;
            }
            emit(() -> signals.notification(payload));
            try {
                onNotification.accept(payload);
            } catch (RuntimeException e) {
                LOG.debug("notification consumer for channel {} failed", channel, e);
            }
        }

        @Override
        public void lost(Throwable cause) {
            lock.lock();
            try {
                if (lost == null) {
                    lost = cause != null ? cause : new SQLException("listener connection lost", "08006");
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }
}
