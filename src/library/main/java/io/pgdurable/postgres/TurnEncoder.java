package io.pgdurable.postgres;

import static io.pgdurable.postgres.SqlRunner.setLongOrNull;

import io.pgdurable.internal.longpoll.Hint;
import io.pgdurable.spi.Event;
import io.pgdurable.spi.Events;
import io.pgdurable.spi.ExecutionMetadata;
import io.pgdurable.spi.ProviderException;
import io.pgdurable.spi.ScheduledActivityIdentifier;
import io.pgdurable.spi.WorkItem;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Turns one orchestration ack into the parallel arrays of {@code ack_orchestration_item}: the history delta, the
 * items for both queues, and the two things the provider must derive from events (the last custom-status update,
 * the key-value mutations). Everything is validated here, before any SQL runs; {@link #bind} sets the turn's
 * arguments of every form of the ack.
 */
final class TurnEncoder {
    static final String OP = "ackOrchestrationItem";
    private static final Set<String> STATUSES = Set.of(ExecutionMetadata.RUNNING, ExecutionMetadata.COMPLETED,
            ExecutionMetadata.FAILED, ExecutionMetadata.CONTINUED_AS_NEW);

    final Long[] eventIds;
    final String[] eventTypes;
    final String[] eventData;
    final String[] workerItems;
    final String[] workerInstances;
    final Long[] workerExecutions;
    final Long[] workerActivities;
    final String[] workerSessions;
    final String[] workerTags;
    final String[] orchInstances;
    final String[] orchKinds;
    final String[] orchItems;
    final Long[] orchVisibleAt;
    int customStatusAction;
    String customStatus;
    final String[] kvOps;
    final String[] kvKeys;
    final String[] kvValues;
    final Long[] kvUpdatedMs;
    final String[] cancelInstances;
    final Long[] cancelExecutions;
    final Long[] cancelActivities;
    final Long pinnedVersion;
    /** The ack's time (application clock), its execution, metadata and worker items as given. */
    final long now;
    final long executionId;
    final ExecutionMetadata metadata;
    final List<WorkItem> workers;

    TurnEncoder(Payloads payloads, long now, long executionId, List<Event> delta, List<WorkItem> workers,
                List<WorkItem> orchestrators, ExecutionMetadata metadata,
                List<ScheduledActivityIdentifier> cancelled) {
        if (executionId < 1) {
            throw ProviderException.permanent(OP, "executionId must be at least 1, was " + executionId);
        }
        Payloads.notNull(OP, "historyDelta", delta);
        Payloads.notNull(OP, "workerItems", workers);
        Payloads.notNull(OP, "orchestratorItems", orchestrators);
        Payloads.notNull(OP, "metadata", metadata);
        Payloads.notNull(OP, "cancelledActivities", cancelled);
        if (metadata.status() != null && !STATUSES.contains(metadata.status())) {
            throw ProviderException.permanent(OP, "metadata status '" + metadata.status() + "' is not one of "
                    + STATUSES);
        }
        payloads.checkSize(OP, "metadata output", metadata.output());
        this.now = now;
        this.executionId = executionId;
        this.metadata = metadata;
        this.workers = workers;
        pinnedVersion = metadata.pinnedVersion() == null ? null : metadata.pinnedVersion().packed();

        int n = delta.size();
        eventIds = new Long[n];
        eventTypes = new String[n];
        eventData = new String[n];
        List<String> ops = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        List<String> values = new ArrayList<>();
        List<Long> updated = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Event e = delta.get(i);
            Map<String, Object> f = payloads.checkEvent(OP, i, e);
            eventIds[i] = e.eventId();
            eventTypes[i] = e.type();
            eventData[i] = e.data();
            switch (e.type()) {
                case Events.CUSTOM_STATUS_UPDATED -> {
                    Object status = f.get("status");
                    if (status != null && !(status instanceof String)) {
                        throw ProviderException.permanent(OP, "CustomStatusUpdated event " + e.eventId()
                                + ": status must be a string or null");
                    }
                    customStatusAction = status == null ? 2 : 1; // the last update of the turn wins
                    customStatus = (String) status;
                }
                case Events.KEY_VALUE_SET -> {
                    ops.add("set");
                    keys.add(string(e, f, "key"));
                    values.add(string(e, f, "value"));
                    updated.add(f.get("last_updated_at_ms") instanceof Long ts ? ts : now);
                }
                case Events.KEY_VALUE_CLEARED -> {
                    ops.add("clear");
                    keys.add(string(e, f, "key"));
                    values.add(null);
                    updated.add(now);
                }
                case Events.KEY_VALUES_CLEARED -> {
                    ops.add("clear_all");
                    keys.add(null);
                    values.add(null);
                    updated.add(now);
                }
                default -> { }
            }
        }
        kvOps = ops.toArray(new String[0]);
        kvKeys = keys.toArray(new String[0]);
        kvValues = values.toArray(new String[0]);
        kvUpdatedMs = updated.toArray(new Long[0]);

        int w = workers.size();
        workerItems = new String[w];
        workerInstances = new String[w];
        workerExecutions = new Long[w];
        workerActivities = new Long[w];
        workerSessions = new String[w];
        workerTags = new String[w];
        for (int i = 0; i < w; i++) {
            WorkItem item = workers.get(i);
            if (!(item instanceof WorkItem.ActivityExecute a)) {
                throw ProviderException.permanent(OP, "worker item #" + i + " is "
                        + (item == null ? "null" : item.kind()) + "; only ActivityExecute belongs on the worker queue");
            }
            workerItems[i] = payloads.encode(OP, "worker item #" + i, a);
            workerInstances[i] = a.instance();
            workerExecutions[i] = a.executionId();
            workerActivities[i] = a.id();
            workerSessions[i] = a.sessionId();
            workerTags[i] = a.tag();
        }

        int o = orchestrators.size();
        orchInstances = new String[o];
        orchKinds = new String[o];
        orchItems = new String[o];
        orchVisibleAt = new Long[o];
        for (int i = 0; i < o; i++) {
            WorkItem item = orchestrators.get(i);
            if (item instanceof WorkItem.ActivityExecute) {
                throw ProviderException.permanent(OP, "orchestrator item #" + i
                        + " is ActivityExecute, which belongs on the worker queue");
            }
            orchItems[i] = payloads.encode(OP, "orchestrator item #" + i, item);
            orchInstances[i] = item.instance();
            orchKinds[i] = item.kind();
            orchVisibleAt[i] = item instanceof WorkItem.TimerFired t && t.fireAtMs() > 0 ? t.fireAtMs() : now;
        }

        int c = cancelled.size();
        cancelInstances = new String[c];
        cancelExecutions = new Long[c];
        cancelActivities = new Long[c];
        for (int i = 0; i < c; i++) {
            ScheduledActivityIdentifier id = cancelled.get(i);
            Payloads.notNull(OP, "cancelled activity #" + i, id);
            cancelInstances[i] = id.instance();
            cancelExecutions[i] = id.executionId();
            cancelActivities[i] = id.activityId();
        }
    }

    /** What the turn makes claimable now or later, announcing {@code announcedWorkers} of its activities. */
    List<Hint> hints(List<WorkItem> announcedWorkers) {
        return Announcements.turn(now, announcedWorkers, orchInstances, orchVisibleAt, null);
    }

    /** Binds the turn's 31 arguments from the first, for {@code lockToken}; returns the next parameter index. */
    int bind(Connection c, PreparedStatement ps, String lockToken) throws SQLException {
        int i = 1;
        ps.setString(i++, lockToken);
        ps.setLong(i++, now);
        ps.setLong(i++, executionId);
        ps.setArray(i++, c.createArrayOf("bigint", eventIds));
        ps.setArray(i++, c.createArrayOf("text", eventTypes));
        ps.setArray(i++, c.createArrayOf("text", eventData));
        ps.setArray(i++, c.createArrayOf("text", workerItems));
        ps.setArray(i++, c.createArrayOf("text", workerInstances));
        ps.setArray(i++, c.createArrayOf("bigint", workerExecutions));
        ps.setArray(i++, c.createArrayOf("bigint", workerActivities));
        ps.setArray(i++, c.createArrayOf("text", workerSessions));
        ps.setArray(i++, c.createArrayOf("text", workerTags));
        ps.setArray(i++, c.createArrayOf("text", orchInstances));
        ps.setArray(i++, c.createArrayOf("text", orchKinds));
        ps.setArray(i++, c.createArrayOf("text", orchItems));
        ps.setArray(i++, c.createArrayOf("bigint", orchVisibleAt));
        ps.setString(i++, metadata.status());
        ps.setString(i++, metadata.output());
        ps.setString(i++, metadata.orchestrationName());
        ps.setString(i++, metadata.orchestrationVersion());
        ps.setString(i++, metadata.parentInstanceId());
        setLongOrNull(ps, i++, pinnedVersion);
        ps.setInt(i++, customStatusAction);
        ps.setString(i++, customStatus);
        ps.setArray(i++, c.createArrayOf("text", kvOps));
        ps.setArray(i++, c.createArrayOf("text", kvKeys));
        ps.setArray(i++, c.createArrayOf("text", kvValues));
        ps.setArray(i++, c.createArrayOf("bigint", kvUpdatedMs));
        ps.setArray(i++, c.createArrayOf("text", cancelInstances));
        ps.setArray(i++, c.createArrayOf("bigint", cancelExecutions));
        ps.setArray(i++, c.createArrayOf("bigint", cancelActivities));
        return i;
    }

    private static String string(Event e, Map<String, Object> f, String name) {
        Object v = f.get(name);
        if (!(v instanceof String s)) {
            throw ProviderException.permanent(OP, e.type() + " event " + e.eventId() + ": '" + name
                    + "' must be a string");
        }
        return s;
    }
}
