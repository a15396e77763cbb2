package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Claims ahead: {@code fetch_orchestration_item(p_now, p_visible_by, …)} claims what is visible by
 * {@code p_visible_by} and judges leases by {@code p_now} alone, so a claim made ahead of a visibility time never takes
 * a lease that has not ended, and the lease it takes starts at its own clock. Called as the provider calls it, on
 * a provider whose clock stands still at {@link #T0}.
 */
class ClaimAheadTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final long LOCK_MS = 5_000;
    private String schema;
    private String s;
    private PostgresProvider provider;
    private Connection c;

    @BeforeEach
    void migrate() throws SQLException {
        schema = TestDatabase.newSchemaName("ahead");
        // A clock years behind the server's on purpose: the skew check would refuse it.
        provider = PostgresProvider.create(TestDatabase.config(schema)
                .clock(Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC)).clockSkewCheck(false).build());
        s = Identifiers.quote(schema);
        c = TestDatabase.connect();
    }

    @AfterEach
    void drop() throws SQLException {
        c.close();
        provider.close();
        TestDatabase.dropSchema(schema);
    }

    /** One claim: the claimed instance and how many messages it took, or null. */
    private List<Object> claim(long now, long visibleBy, String token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT instance_id, cardinality(messages) FROM " + s
                + ".fetch_orchestration_item(?, ?, ?, ?, NULL, NULL)")) {
            ps.setLong(1, now);
            ps.setLong(2, visibleBy);
            ps.setLong(3, LOCK_MS);
            ps.setString(4, token);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? List.of(rs.getString(1), rs.getInt(2)) : null;
            }
        }
    }

    /** The instance lock of {@code instance}: its claim time and its end. */
    private List<Long> lock(String instance) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT locked_at_ms, locked_until_ms FROM " + s
                + ".instance_locks WHERE instance_id = ?")) {
            ps.setString(1, instance);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? List.of(rs.getLong(1), rs.getLong(2)) : null;
            }
        }
    }

    @Test
    void a_claim_ahead_takes_what_is_visible_by_then_and_its_lease_starts_at_its_own_clock() throws SQLException {
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("later", "O", "{}", "1.0.0"),
                Duration.ofSeconds(10));
        assertNull(claim(T0, T0, "t1"), "not visible now");
        assertNull(claim(T0, T0 + 9_999, "t2"), "not visible by a millisecond before its time");
        assertEquals(List.of("later", 1), claim(T0, T0 + 10_000, "t3"));
        assertEquals(List.of(T0, T0 + LOCK_MS), lock("later"), "the lease runs from the claim's own clock");
    }

    @Test
    void a_claim_ahead_never_takes_a_lease_that_has_not_ended_by_its_own_clock() throws SQLException {
        provider.enqueueForOrchestrator(new WorkItem.StartOrchestration("held", "O", "{}", "1.0.0"), null);
        assertEquals(List.of("held", 1), claim(T0, T0, "first"));
        provider.enqueueForOrchestrator(new WorkItem.ExternalRaised("held", "e", "{}"), null);
        assertNull(claim(T0 + 1_000, T0 + 9_000, "second"),
                "the lease ends at T0 + 5 s: later than the claim's clock, though before its visibility time");
        assertNull(claim(T0 + LOCK_MS - 1, T0 + LOCK_MS + 1_000, "third"), "a millisecond before the lease ends");
        assertEquals(List.of("held", 2), claim(T0 + LOCK_MS, T0 + LOCK_MS, "fourth"), "both messages once it ended");
    }
}
