package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.setLongOrNull;

import io.pgdurable.spi.CustomStatus;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Json;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.SystemStats;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An instance's history and state, as {@link PostgresProvider} and its management facet read them: the history of
 * an execution (every event checked to decode), a history append, the custom status, the key-value store and the
 * instance's statistics. Each is one function call; none makes anything claimable.
 */
final class InstanceReads {
    private final SqlRunner db;
    private final Statements sql;
    private final Clock clock;
    private final Payloads payloads;

    InstanceReads(SqlRunner db, Statements sql, Clock clock, Payloads payloads) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.payloads = payloads;
    }

    /** The events of {@code executionId}, or of the latest execution when it is null, in order. */
    List<Event> history(String op, String instance, Long executionId) {
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.readHistory)) {
                ps.setString(1, instance);
                setLongOrNull(ps, 2, executionId);
                List<Event> events = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        long id = rs.getLong(1);
                        String data = rs.getString(3);
                        try {
                            Json.parseObject(data);
                        } catch (IllegalArgumentException bad) {
                            throw ProviderException.permanent(op, "history event " + id + " of instance '" + instance
                                    + "' cannot be decoded: " + bad.getMessage());
                        }
                        events.add(new Event(id, rs.getString(2), data));
                    }
                }
                return events;
            }
        });
    }

    void append(String instance, long executionId, List<Event> newEvents) {
        String op = "appendWithExecution";
        Payloads.notNull(op, "instance", instance);
        Payloads.notNull(op, "newEvents", newEvents);
        if (newEvents.isEmpty()) {
            return;
        }
        int n = newEvents.size();
        Long[] ids = new Long[n];
        String[] types = new String[n];
        String[] data = new String[n];
        for (int i = 0; i < n; i++) {
            Event e = newEvents.get(i);
            payloads.checkEvent(op, i, e);
            ids[i] = e.eventId();
            types[i] = e.type();
            data[i] = e.data();
        }
        long now = clock.millis();
        db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.appendHistory)) {
                ps.setString(1, instance);
                ps.setLong(2, executionId);
                ps.setLong(3, now);
                ps.setArray(4, c.createArrayOf("bigint", ids));
                ps.setArray(5, c.createArrayOf("text", types));
                ps.setArray(6, c.createArrayOf("text", data));
                ps.execute();
                return null;
            }
        });
    }

    Optional<CustomStatus> customStatus(String instance, long lastSeenVersion) {
        String op = "getCustomStatus";
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getCustomStatus)) {
                ps.setString(1, instance);
                ps.setLong(2, lastSeenVersion);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(new CustomStatus(rs.getString(1), rs.getLong(2)))
                            : Optional.empty();
                }
            }
        });
    }

    /** The instance's key-value pairs, or only {@code key}'s when it is not null. */
    Map<String, String> kvValues(String op, String instance, String key) {
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getKvValues)) {
                ps.setString(1, instance);
                ps.setString(2, key);
                Map<String, String> values = new LinkedHashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        values.put(rs.getString(1), rs.getString(2));
                    }
                }
                return values;
            }
        });
    }

    Optional<SystemStats> stats(String instance) {
        String op = "getInstanceStats";
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getInstanceStats)) {
                ps.setString(1, instance);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    return Optional.of(new SystemStats(rs.getLong(1), rs.getLong(2),
                            carriedEventCount(rs.getString(3)), rs.getLong(4), rs.getLong(5)));
                }
            }
        });
    }

    private static long carriedEventCount(String startedEvent) {
        if (startedEvent == null) {
            return 0;
        }
        try {
            Object carried = Json.parseObject(startedEvent).get("carry_forward_events");
            return carried instanceof List<?> list ? list.size() : 0;
        } catch (IllegalArgumentException undecodable) {
            return 0;
        }
    }
}
