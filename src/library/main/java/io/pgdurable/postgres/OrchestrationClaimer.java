package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.logWarnings;
import static io.pgdurable.postgres.SqlRunner.longs;
import static io.pgdurable.postgres.SqlRunner.setLongOrNull;
import static io.pgdurable.postgres.SqlRunner.strings;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.FetchedOrchestration;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.KvEntry;
import io.pgdurable.spi.OrchestrationItem;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.WorkItem;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One claim attempt of the orchestrator queue: locks the next instance's visible messages with a fresh token and
 * decodes the reply (messages, history, key-value snapshot) into a {@link FetchedOrchestration}. Undecodable
 * messages release the lock before failing; undecodable history becomes the item's {@code historyError}.
 */
final class OrchestrationClaimer {
    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final Leases leases;

    OrchestrationClaimer(SqlRunner db, Statements sql, Clock clock, Leases leases) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.leases = leases;
    }

    /**
     * @param now       the claim's own clock: leases are judged by it, and the lease taken starts at it
     * @param visibleBy claim what is visible by then: {@code now}, or a visibility time up to the timer lead ahead of
     *                  it when the caller returns the claim no earlier than that time
     */
    Optional<FetchedOrchestration> claim(String op, long now, long visibleBy, long lockMs, Long min, Long max) {
        String token = SqlRunner.newToken();
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fetchOrchestrationItem)) {
                ps.setLong(1, now);
                ps.setLong(2, visibleBy);
                ps.setLong(3, lockMs);
                ps.setString(4, token);
                setLongOrNull(ps, 5, min);
                setLongOrNull(ps, 6, max);
                try (ResultSet rs = ps.executeQuery()) {
                    logWarnings(ps.getWarnings());
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    return Optional.of(read(rs, token));
                }
            }
        });
    }

    /**
     * Runs a claiming write ({@link Statements#enqueueOrchestratorItemClaiming} or
     * {@link Statements#ackWorkItemClaiming}, whose own five parameters {@code write} binds): the write, and its
     * message's instance claimed for {@code token} in the same transaction, for a parked fetch of {@code taker}'s
     * kind (the hand-over). Empty when the instance could not
     * be claimed then (locked, held, not startable, outside the version range), or when another of its queued
     * messages cannot be decoded: that batch is given back at once, and the fetch meets the error through its own
     * claim, as it would have without the hand-over. The write itself is committed either way.
     */
    Optional<FetchedOrchestration> writeClaiming(String op, String statement, WritePath.Binder write, String token,
                                                 HandOver.OrchestrationTaker taker) {
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(statement)) {
                write.bind(ps);
                ps.setString(6, token);
                ps.setLong(7, taker.lockMs());
                setLongOrNull(ps, 8, taker.minVersion());
                setLongOrNull(ps, 9, taker.maxVersion());
                try (ResultSet rs = ps.executeQuery()) {
                    logWarnings(ps.getWarnings());
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    try {
                        return Optional.of(read(rs, token));
                    } catch (ProviderException undecodable) {
                        return Optional.empty();
                    }
                }
            }
        });
    }

    private FetchedOrchestration read(ResultSet rs, String token) throws SQLException {
        String instance = rs.getString("instance_id");
        String[] messageTexts = strings(rs.getArray("messages"));
        List<WorkItem> messages = new ArrayList<>(messageTexts.length);
        try {
            for (String text : messageTexts) {
                messages.add(WorkItem.fromJson(text));
            }
        } catch (IllegalArgumentException bad) {
            // A fetch that throws must hold no lock: give the batch back before reporting.
            leases.releaseUndecodableOrchestration(token);
            throw ProviderException.permanent("fetchOrchestrationItem", "a queued message of instance '" + instance
                    + "' cannot be decoded: " + bad.getMessage());
        }
        boolean hasInstance = rs.getBoolean("has_instance");
        String name = rs.getString("orchestration_name");
        String version = rs.getString("orchestration_version");
        if (!hasInstance) {
            name = "Unknown";
            for (WorkItem m : messages) {
                if (m instanceof WorkItem.StartOrchestration s) {
                    name = s.orchestration();
                    version = s.version();
                    break;
                }
                if (m instanceof WorkItem.ContinueAsNew can) {
                    name = can.orchestration();
                    version = can.version();
                    break;
                }
            }
        }
        long executionId = rs.getLong("execution_id");

        List<Event> history = new ArrayList<>();
        String historyError = null;
        Long[] ids = longs(rs.getArray("event_ids"));
        String[] types = strings(rs.getArray("event_types"));
        String[] data = strings(rs.getArray("event_data"));
        for (int i = 0; i < ids.length; i++) {
            try {
                Json.parseObject(data[i]);
            } catch (IllegalArgumentException bad) {
                historyError = "history event " + ids[i] + " of execution " + executionId + " of instance '"
                        + instance + "' cannot be decoded: " + bad.getMessage();
                history.clear();
                break;
            }
            history.add(new Event(ids[i], types[i], data[i]));
        }

        Map<String, KvEntry> kv = new LinkedHashMap<>();
        String[] keys = strings(rs.getArray("kv_keys"));
        String[] values = strings(rs.getArray("kv_values"));
        Long[] updated = longs(rs.getArray("kv_updated_ms"));
        for (int i = 0; i < keys.length; i++) {
            kv.put(keys[i], new KvEntry(values[i], updated[i]));
        }
        OrchestrationItem item = new OrchestrationItem(instance, name, executionId,
                version == null ? "unknown" : version, history, messages, Optional.ofNullable(historyError), kv);
        return new FetchedOrchestration(item, token, rs.getInt("attempt_count"));
    }
}
