package io.pgdurable.postgres.batch;

import static io.pgdurable.postgres.batch.BatchDb.activity;
import static io.pgdurable.postgres.batch.BatchDb.q;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.OffsetClock;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkAck;
import io.pgdurable.spi.WorkBatch;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Row-naming tokens: a batched claim writes tokens of the form {@code @<row id>:<random part>}, which acks, renewals
 * and releases find by primary key; every other token is found through the partial unique index on
 * {@code lock_token}. Both kinds are refused alike when they do not hold a live lease.
 */
class RowNamingTokensTest {
    private static final Duration LOCK = Duration.ofSeconds(60);
    private final Hubs hubs = new Hubs("rowtok");
    private final OffsetClock clock = new OffsetClock(0);
    private String schema;

    @AfterEach
    void stop() {
        hubs.close();
    }

    private PostgresProvider provider() {
        if (schema == null) {
            schema = hubs.newSchema();
        }
        return hubs.open(schema, b -> b.clock(clock));
    }

    private static long activityId(FetchedWorkItem f) {
        return ((WorkItem.ActivityExecute) f.item()).id();
    }

    private List<FetchedWorkItem> fetch(PostgresProvider p, int n) {
        return p.fetchWorkItems(LOCK, WorkBatch.upTo(n), null, TagFilter.defaultOnly());
    }

    /** The row that stores {@code token} (read by token, not through the provider), or -1. */
    private long rowHolding(String token) {
        List<Long> ids = BatchDb.longs("SELECT id FROM " + q(schema) + ".worker_queue WHERE lock_token = '"
                + token.replace("'", "''") + "'");
        return ids.isEmpty() ? -1 : ids.get(0);
    }

    private long rowOfActivity(long activity) {
        return BatchDb.longs("SELECT id FROM " + q(schema) + ".worker_queue WHERE activity_id = " + activity).get(0);
    }

    private List<String> storedTokens() {
        return BatchDb.strings("SELECT coalesce(lock_token, '-') FROM " + q(schema) + ".worker_queue ORDER BY id");
    }

    private static void assertRefused(Executable call, String expectedWords) {
        ProviderException e = assertThrows(ProviderException.class, call);
        assertFalse(e.retryable(), "a refused token is permanent: " + e.getMessage());
        assertEquals("PD001", e.sqlState().orElse(null), e.getMessage());
        assertTrue(e.getMessage().contains(expectedWords), e.getMessage());
    }

    @Test
    void a_batched_claim_writes_tokens_that_name_their_rows() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2), activity(3)));
        List<FetchedWorkItem> got = fetch(p, 3);
        assertEquals(3, got.size());
        String randomPart = null;
        for (FetchedWorkItem f : got) {
            String token = f.lockToken();
            long row = rowOfActivity(activityId(f));
            assertTrue(token.startsWith("@" + row + ":"), "the token names row " + row + ": " + token);
            assertEquals(row, rowHolding(token), "and is the token stored on it");
            String rest = token.substring(token.indexOf(':') + 1);
            if (randomPart != null) {
                assertEquals(randomPart, rest, "one claim, one random part");
            }
            randomPart = rest;
        }
        // The unique constraint gave way to a partial unique index that leaves row-naming tokens out. (Definitions
        // are read for this schema's indexes only: parallel tests drop theirs, and pg_indexes may read any.)
        List<String> tokenIndexes = BatchDb.strings("SELECT pg_get_indexdef(c.oid) FROM pg_class c WHERE "
                + "c.relnamespace = '" + q(schema) + "'::regnamespace AND c.relkind = 'i' ORDER BY c.relname").stream()
                .filter(d -> d.contains(".worker_queue ") && d.contains("(lock_token)")).toList();
        assertEquals(1, tokenIndexes.size(), tokenIndexes.toString());
        assertTrue(tokenIndexes.get(0).startsWith("CREATE UNIQUE INDEX worker_queue_lock_token_idx ")
                && tokenIndexes.get(0).endsWith("WHERE (lock_token !~~ '@%'::text)"), tokenIndexes.get(0));
        assertEquals(0, BatchDb.count(schema, "worker_queue WHERE lock_token IS NOT NULL AND lock_token NOT LIKE '@%'"));

        // A second claim's tokens differ in their random part.
        p.enqueueForWorker(activity(4));
        String next = fetch(p, 1).get(0).lockToken();
        assertFalse(next.endsWith(":" + randomPart), next);
    }

    @Test
    void row_naming_tokens_renew_release_and_ack_their_own_rows_only() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2), activity(3), activity(4)));
        List<FetchedWorkItem> got = fetch(p, 4);
        String renewed = got.get(0).lockToken();
        String released = got.get(1).lockToken();
        String acked = got.get(2).lockToken();
        String listed = got.get(3).lockToken();
        long untilBefore = BatchDb.longs("SELECT locked_until_ms FROM " + q(schema) + ".worker_queue WHERE id = "
                + rowHolding(renewed)).get(0);

        clock.advance(Duration.ofSeconds(10));
        p.renewWorkItemLock(renewed, LOCK);
        long untilAfter = BatchDb.longs("SELECT locked_until_ms FROM " + q(schema) + ".worker_queue WHERE id = "
                + rowHolding(renewed)).get(0);
        assertTrue(untilAfter >= untilBefore + 9_000, "renewed: " + untilBefore + " -> " + untilAfter);

        p.abandonWorkItem(released, null, true);
        assertEquals(-1, rowHolding(released), "released");
        assertEquals(0, BatchDb.longs("SELECT attempt_count FROM " + q(schema) + ".worker_queue WHERE activity_id = "
                + activityId(got.get(1))).get(0), "its attempt not counted");

        p.ackWorkItem(acked, null);
        assertEquals(List.of(1L, 2L, 4L), BatchDb.workerActivities(schema), "only the acked row is gone");
        List<AckResult> results = p.ackWorkItems(List.of(new WorkAck(listed, null), new WorkAck(renewed, null)));
        assertNull(results.get(0).error());
        assertNull(results.get(1).error());
        assertEquals(List.of(2L), BatchDb.workerActivities(schema), "the released item is all that is left");

        // Each token worked once.
        assertRefused(() -> p.ackWorkItem(acked, null), "not found");
        assertRefused(() -> p.renewWorkItemLock(renewed, LOCK), "not found");
        assertRefused(() -> p.abandonWorkItem(released, null, false), "no worker item holds it");
    }

    @Test
    void malformed_foreign_and_stale_row_naming_tokens_are_refused_and_change_nothing() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2)));
        List<FetchedWorkItem> got = fetch(p, 2);
        long row = rowHolding(got.get(0).lockToken());
        String randomPart = got.get(0).lockToken().substring(got.get(0).lockToken().indexOf(':') + 1);
        List<String> before = storedTokens();

        List<String> bad = List.of(
                "@" + row + ":lock_not-the-one",                      // the right row, another claim's token
                "@" + rowHolding(got.get(1).lockToken()) + "x:" + randomPart, // not a number
                "@999999999:" + randomPart,                          // no such row
                "@12345678901234567890:" + randomPart,               // more digits than a row id has
                "@:" + randomPart, "@", "", "lock_unknown");
        for (String token : bad) {
            assertRefused(() -> p.ackWorkItem(token, null), "not found");
            assertRefused(() -> p.renewWorkItemLock(token, LOCK), "not found");
            assertRefused(() -> p.abandonWorkItem(token, null, false), "no worker item holds it");
        }
        List<WorkAck> acks = new ArrayList<>();
        bad.forEach(t -> acks.add(new WorkAck(t, null)));
        for (AckResult r : p.ackWorkItems(acks)) {
            assertEquals("PD001", r.error().sqlState().orElse(null), r.lockToken());
        }
        assertEquals(before, storedTokens(), "nothing stored changed");
        assertEquals(List.of(1L, 2L), BatchDb.workerActivities(schema));

        // A lease that ended and was claimed again: the old token names the row but no longer holds it.
        String stale = got.get(0).lockToken();
        clock.advance(LOCK.plusSeconds(1));
        assertRefused(() -> p.renewWorkItemLock(stale, LOCK), "expired");
        List<FetchedWorkItem> again = fetch(p, 2);
        assertEquals(2, again.size());
        String fresh = again.get(0).lockToken();
        assertTrue(fresh.startsWith("@" + row + ":"), fresh);
        assertNotEquals(stale, fresh);
        assertRefused(() -> p.ackWorkItem(stale, null), "not found");
        assertEquals("PD001", p.ackWorkItems(List.of(new WorkAck(stale, null))).get(0).error().sqlState().orElse(null));
        p.ackWorkItem(fresh, null);
        assertEquals(List.of(2L), BatchDb.workerActivities(schema));
    }

    /**
     * The token parser uses string functions, not a regular expression (they cost a third as much); it must accept
     * exactly the texts the expression {@code ^@[0-9]{1,18}:} describes and read the same row id from them. The
     * expression is the reference here.
     */
    @Test
    void the_token_parser_reads_the_same_row_ids_as_the_defining_regular_expression() throws SQLException {
        provider();
        List<String> tokens = List.of("@1:x", "@1:", "@007:x", "@123456789012345678:x", "@1234567890123456789:x",
                "@:x", "@", "", "@12", "@12a:x", "@-1:x", "@+1:x", "@ 1:x", "@1 :x", "@@1:x", "@\u0663:x",
                "@\uff11:x", "@1:2:3", "@1.5:x", "ab.1", "lock_1", ":1", "1:x", "@0:x", "@9223372036854775807:x");
        String sql = "SELECT t, " + q(schema) + ".worker_token_row(t), CASE WHEN t ~ '^@[0-9]{1,18}:' THEN "
                + "substring(t FROM 2 FOR strpos(t, ':') - 2)::BIGINT END FROM unnest(?::TEXT[]) AS t";
        int parsed = 0;
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setArray(1, c.createArrayOf("text", tokens.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Object parser = rs.getObject(2);
                    assertEquals(rs.getObject(3), parser, "token '" + rs.getString(1) + "'");
                    parsed += parser == null ? 0 : 1;
                }
            }
            try (PreparedStatement nulls = c.prepareStatement("SELECT " + q(schema) + ".worker_token_row(NULL)");
                 ResultSet rs = nulls.executeQuery()) {
                rs.next();
                assertNull(rs.getObject(1), "a NULL token names no row");
            }
        }
        assertEquals(6, parsed, "row-naming tokens among the inputs");
    }

    @Test
    void an_ended_row_naming_lease_is_refused_saying_how_long_ago_it_expired() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2)));
        List<FetchedWorkItem> got = fetch(p, 2);
        clock.advance(LOCK.plusSeconds(5));
        assertRefused(() -> p.ackWorkItem(got.get(0).lockToken(), null), "expired");
        ProviderException listed = p.ackWorkItems(List.of(new WorkAck(got.get(1).lockToken(), null))).get(0).error();
        assertTrue(listed.getMessage().contains("expired"), listed.getMessage());
        assertEquals(2, BatchDb.count(schema, "worker_queue"), "nothing acked");
    }

    @Test
    void tokens_of_single_claims_still_work_and_mix_with_row_naming_tokens_in_one_ack_call() {
        PostgresProvider p = provider();
        p.enqueueAllForWorker(List.of(activity(1), activity(2), activity(3)));
        FetchedWorkItem single = p.fetchWorkItem(LOCK, Duration.ZERO, null, TagFilter.defaultOnly()).orElseThrow();
        assertFalse(single.lockToken().startsWith("@"), "a single claim's token is the provider's own");
        List<FetchedWorkItem> batch = fetch(p, 2);
        p.renewWorkItemLock(single.lockToken(), LOCK);
        List<AckResult> results = p.ackWorkItems(List.of(new WorkAck(batch.get(0).lockToken(), null),
                new WorkAck(single.lockToken(), null), new WorkAck(batch.get(1).lockToken(), null),
                new WorkAck(single.lockToken(), null)));
        assertNull(results.get(0).error());
        assertNull(results.get(1).error());
        assertNull(results.get(2).error());
        assertEquals("PD001", results.get(3).error().sqlState().orElse(null), "a token given twice is acked once");
        assertEquals(0, BatchDb.count(schema, "worker_queue"));
    }
}
