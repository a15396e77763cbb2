package io.pgdurable.chaos;

import io.pgdurable.longpoll.ChannelListener;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread that, at random intervals, terminates the run's listener backend, terminates the run's pool backends,
 * or pauses the relay in front of the listener for a few seconds. The three kinds come in shuffled rounds, so each
 * happens about as often as the others even in a short run; a kill that finds no backend (the listener is between
 * connections) does not count and goes to the end of its round.
 *
 * <p>Only this run's backends are touched: they are the ones connected from the relays' ports (and carrying the
 * provider's application name), never another process's on the same server.
 */
final class FaultInjector implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(FaultInjector.class);
    static final String POOL_APPLICATION_NAME = "pgdurable";
    private static final long WARM_UP_MILLIS = 2_000;
    private static final long MIN_GAP_MILLIS = 500;
    private static final long MAX_GAP_MILLIS = 2_000;
    private static final long MIN_PAUSE_MILLIS = 2_000;
    private static final long MAX_PAUSE_MILLIS = 5_000;
    private static final String TERMINATE = "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
            + "FROM pg_stat_activity WHERE datname = current_database() AND application_name = ? "
            + "AND client_port = ANY (?) AND pid <> pg_backend_pid()";

    enum Fault { LISTENER_KILL, POOL_KILL, RELAY_PAUSE }

    private final AdminConnection admin;
    private final LoopbackRelay listenerRelay;
    private final LoopbackRelay poolRelay;
    private final Random random;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final Thread thread;
    private final AtomicLong listenerKills = new AtomicLong();
    private final AtomicLong listenerBackends = new AtomicLong();
    private final AtomicLong poolKills = new AtomicLong();
    private final AtomicLong poolBackends = new AtomicLong();
    private final AtomicLong missedKills = new AtomicLong();
    private final AtomicLong pauses = new AtomicLong();
    private final AtomicLong pausedMillis = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();

    FaultInjector(AdminConnection admin, LoopbackRelay listenerRelay, LoopbackRelay poolRelay, Random random) {
        this.admin = admin;
        this.listenerRelay = listenerRelay;
        this.poolRelay = poolRelay;
        this.random = random;
        this.thread = new Thread(this::loop, "pgdurable-chaos-faults");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void loop() {
        List<Fault> round = new ArrayList<>();
        try {
            if (stopped(WARM_UP_MILLIS)) {
                return;
            }
            while (true) {
                if (round.isEmpty()) {
                    round.addAll(List.of(Fault.values()));
                    Collections.shuffle(round, random);
                }
                Fault next = round.remove(0);
                if (!inject(next)) {
                    round.add(next); // the others first, then this one again
                }
                if (stopped(between(MIN_GAP_MILLIS, MAX_GAP_MILLIS))) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            listenerRelay.resume();
        }
    }

    /** Whether the fault happened (a kill that found nothing to kill did not). */
    private boolean inject(Fault fault) throws InterruptedException {
        switch (fault) {
            case LISTENER_KILL -> {
                return kill(ChannelListener.APPLICATION_NAME, listenerRelay, listenerKills, listenerBackends);
            }
            case POOL_KILL -> {
                return kill(POOL_APPLICATION_NAME, poolRelay, poolKills, poolBackends);
            }
            default -> {
                long millis = between(MIN_PAUSE_MILLIS, MAX_PAUSE_MILLIS);
                listenerRelay.pause();
                pauses.incrementAndGet();
                long start = System.nanoTime();
                try {
                    stopped(millis);
                } finally {
                    listenerRelay.resume();
                    pausedMillis.addAndGet(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                }
                return true;
            }
        }
    }

    private boolean kill(String applicationName, LoopbackRelay relay, AtomicLong kills, AtomicLong backends) {
        List<Integer> ports = relay.upstreamPorts();
        if (ports.isEmpty()) {
            missedKills.incrementAndGet();
            return false;
        }
        try {
            Connection c = admin.get();
            long terminated;
            try (PreparedStatement ps = c.prepareStatement(TERMINATE)) {
                Array portArray = c.createArrayOf("int4", ports.toArray());
                ps.setString(1, applicationName);
                ps.setArray(2, portArray);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    terminated = rs.getLong(1);
                }
            }
            if (terminated == 0) {
                missedKills.incrementAndGet();
                return false;
            }
            kills.incrementAndGet();
            backends.addAndGet(terminated);
            return true;
        } catch (SQLException e) {
            admin.reset();
            if (failures.incrementAndGet() <= 3) {
                log.warn("chaos: could not terminate {} backends: {}", applicationName, e.getMessage());
            }
            return false;
        }
    }

    private long between(long min, long max) {
        return min + (long) (random.nextDouble() * (max - min));
    }

    /** Waits, and says whether the run asked to stop meanwhile. */
    private boolean stopped(long millis) throws InterruptedException {
        return stop.await(millis, TimeUnit.MILLISECONDS);
    }

    Counts counts() {
        return new Counts(listenerKills.get(), listenerBackends.get(), poolKills.get(), poolBackends.get(),
                missedKills.get(), pauses.get(), pausedMillis.get(), failures.get());
    }

    /** Stops injecting and resumes the relay; returns once the thread has ended (bounded). */
    @Override
    public void close() throws InterruptedException {
        stop.countDown();
        thread.join(5_000);
        listenerRelay.resume();
    }

    record Counts(long listenerKills, long listenerBackends, long poolKills, long poolBackends, long missedKills,
                  long pauses, long pausedMillis, long failures) {}
}
