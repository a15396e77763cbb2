package io.pgdurable.bench;

import java.time.Duration;
import java.util.List;

/**
 * How long and how many: the default profile (the whole run in under about ten minutes) and {@code --quick} (a few
 * seconds per scenario, for tests: it checks the harness, not the speed).
 *
 * @param idleWarmup          settling time before an idle window is counted
 * @param idleWindowLong      long-polling window at {@link #idleWaiters} (a multiple of the 30 s poll timeout, so
 *                            every parked fetch is re-issued a whole number of times)
 * @param idleWindowLongSweep long-polling window at the other waiter counts
 * @param idleWindowShort     short-polling window at every waiter count (short polling is steady at once)
 * @param idleSweep           the waiter counts of the flatness check
 * @param drainItems          items pre-filled for each drain
 * @param drainRounds         drains per arm and mode (figures are medians)
 * @param burstItems          items of the burst-quiet scenario's burst
 * @param burstLock           lock timeout of the burst's claims (their lease ends fall inside the counted window)
 * @param burstWindow         the window counted after the burst was drained
 * @param burstBaseline       the idle window counted before the burst
 * @param pairedRounds        rounds of short and long, order alternating, of the throughput and fan-out scenarios
 *                            (figures are medians of the rounds)
 */
record Profile(String name, Duration idleWarmup, Duration idleWindowLong, Duration idleWindowLongSweep,
               Duration idleWindowShort, int idleWaiters, List<Integer> idleSweep, int wakeSamples, int timerSamples,
               Duration timerMaxDelay, int leaseSamples, int wakesPerItemItems, Duration throughputWarmup,
               Duration throughputWindow, Duration fanoutWarmup, Duration fanoutWindow, Duration notifyPhase,
               int notifyRounds, Duration sidecarWarmup, Duration sidecarWindow, int drainItems, int drainRounds,
               int burstItems, Duration burstLock, Duration burstWindow, Duration burstBaseline, int pairedRounds) {

    static final Profile DEFAULT = new Profile("default", Duration.ofSeconds(3), Duration.ofSeconds(60),
            Duration.ofSeconds(30), Duration.ofSeconds(10), 32, List.of(8, 32, 64), 300, 600, Duration.ofMillis(1500),
            300, 300, Duration.ofSeconds(2), Duration.ofSeconds(8), Duration.ofSeconds(2), Duration.ofSeconds(8),
            Duration.ofSeconds(6), 3, Duration.ofSeconds(2), Duration.ofSeconds(12), 20_000, 3, 20_000,
            Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofSeconds(10), 3);

    static final Profile QUICK = new Profile("quick", Duration.ofMillis(500), Duration.ofSeconds(2),
            Duration.ofSeconds(1), Duration.ofSeconds(1), 32, List.of(8, 32, 64), 20, 20, Duration.ofMillis(300), 5,
            30, Duration.ofMillis(300), Duration.ofSeconds(1), Duration.ofMillis(300), Duration.ofSeconds(1),
            Duration.ofMillis(600), 1, Duration.ofMillis(500), Duration.ofSeconds(2), 1_000, 1, 600,
            Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 2);

    boolean quick() {
        return this == QUICK;
    }
}
