package io.pgdurable.postgres;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * Reads the database server's clock ({@code clock_timestamp()}) beside the application clock, to tell how far apart
 * they are. The server's reading happens somewhere within the round trip, so it is compared with the application
 * clock at the round trip's midpoint, and half the round trip is how far that comparison may be off.
 */
final class ServerClock {
    /** The server's clock, in microseconds since the epoch. */
    static final String STATEMENT = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint";

    /**
     * One comparison.
     *
     * @param offsetMicros      the application clock minus the server's: positive when the application clock is ahead
     * @param uncertaintyMicros half the round trip: the true offset lies within this much of {@code offsetMicros}
     */
    record Offset(long offsetMicros, long uncertaintyMicros) {
        /** How far apart the clocks are at least, whatever the round trip hid. */
        long atLeastMicros() {
            return Math.max(0, Math.abs(offsetMicros) - uncertaintyMicros);
        }
    }

    private final SqlRunner db;
    private final Clock clock;

    ServerClock(SqlRunner db, Clock clock) {
        this.db = db;
        this.clock = clock;
    }

    /**
     * The comparison with the shortest round trip of {@code samples}, taken one after the other on one pooled
     * connection: the first pays for parsing the statement, a later one may be held up by the network or the
     * scheduler, and the shortest is the one that says the most.
     */
    Offset measure(String op, int samples) {
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(STATEMENT)) {
                Offset best = null;
                for (int i = 0; i < samples; i++) {
                    Offset o = sample(ps);
                    if (best == null || o.uncertaintyMicros() < best.uncertaintyMicros()) {
                        best = o;
                    }
                }
                return best;
            }
        });
    }

    boolean closed() {
        return db.closed();
    }

    private Offset sample(PreparedStatement ps) throws SQLException {
        long sentNanos = System.nanoTime();
        long sentMicros = micros(clock.instant());
        long serverMicros;
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            serverMicros = rs.getLong(1);
        }
        long receivedMicros = micros(clock.instant());
        long roundTripMicros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - sentNanos);
        long midpointMicros = sentMicros + (receivedMicros - sentMicros) / 2;
        return new Offset(midpointMicros - serverMicros, (roundTripMicros + 1) / 2);
    }

    private static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1_000);
    }
}
