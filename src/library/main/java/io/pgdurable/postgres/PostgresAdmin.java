package io.pgdurable.postgres;

import io.pgdurable.spi.Event;
import io.pgdurable.spi.ProviderAdmin;
import io.pgdurable.spi.ProviderException;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The management facet of {@link PostgresProvider}. Per-instance and per-tree operations are one function call
 * each; bulk operations select a bounded batch of candidates and then delete or prune one tree or instance per
 * transaction, so no transaction grows with the size of the task hub.
 */
final class PostgresAdmin implements ProviderAdmin {
    private final SqlRunner db;
    private final InstanceReads reads;
    private final Statements sql;
    private final Clock clock;

    PostgresAdmin(SqlRunner db, InstanceReads reads, Statements sql, Clock clock) {
        this.db = db;
        this.reads = reads;
        this.sql = sql;
        this.clock = clock;
    }

    @Override
    public List<String> listInstances() {
        return strings("listInstances", sql.listInstances, null);
    }

    @Override
    public List<String> listInstancesByStatus(String status) {
        Payloads.notNull("listInstancesByStatus", "status", status);
        return strings("listInstancesByStatus", sql.listInstances, status);
    }

    @Override
    public List<String> listInstancesAfter(String after, String prefix, int limit) {
        String op = "listInstancesAfter";
        Payloads.notNull(op, "after", after);
        Payloads.notNull(op, "prefix", prefix);
        if (limit <= 0) {
            throw ProviderException.permanent(op, "limit must be positive, was " + limit);
        }
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.listInstancesAfter)) {
                ps.setString(1, after);
                ps.setString(2, prefix);
                ps.setInt(3, limit);
                return collect(ps);
            }
        });
    }

    @Override
    public List<Long> listExecutions(String instance) {
        String op = "listExecutions";
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.listExecutions)) {
                ps.setString(1, instance);
                List<Long> ids = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ids.add(rs.getLong(1));
                    }
                }
                return ids;
            }
        });
    }

    @Override
    public List<Event> readHistoryWithExecutionId(String instance, long executionId) {
        return reads.history("readHistoryWithExecutionId", instance, executionId);
    }

    @Override
    public List<Event> readHistory(String instance) {
        return reads.history("readHistory", instance, latestExecutionId(instance));
    }

    @Override
    public long latestExecutionId(String instance) {
        return getInstanceInfo(instance).currentExecutionId();
    }

    @Override
    public InstanceInfo getInstanceInfo(String instance) {
        String op = "getInstanceInfo";
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getInstanceInfo)) {
                ps.setString(1, instance);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new InstanceInfo(rs.getString(1), rs.getString(2), rs.getString(3), rs.getLong(4),
                            rs.getString(5), Optional.ofNullable(rs.getString(6)), rs.getLong(7), rs.getLong(8),
                            Optional.ofNullable(rs.getString(9)));
                }
            }
        });
    }

    @Override
    public ExecutionInfo getExecutionInfo(String instance, long executionId) {
        String op = "getExecutionInfo";
        Payloads.notNull(op, "instance", instance);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getExecutionInfo)) {
                ps.setString(1, instance);
                ps.setLong(2, executionId);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    long completed = rs.getLong(5);
                    Optional<Long> completedAt = rs.wasNull() ? Optional.empty() : Optional.of(completed);
                    return new ExecutionInfo(rs.getLong(1), rs.getString(2), Optional.ofNullable(rs.getString(3)),
                            rs.getLong(4), completedAt, rs.getInt(6));
                }
            }
        });
    }

    @Override
    public SystemMetrics getSystemMetrics() {
        return db.call("getSystemMetrics", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getSystemMetrics); ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new SystemMetrics(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                        rs.getLong(6));
            }
        });
    }

    @Override
    public QueueDepths getQueueDepths() {
        long now = clock.millis();
        return db.call("getQueueDepths", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getQueueDepths)) {
                ps.setLong(1, now);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new QueueDepths(Math.toIntExact(rs.getLong(1)), Math.toIntExact(rs.getLong(2)), 0);
                }
            }
        });
    }

    @Override
    public List<String> listChildren(String instanceId) {
        Payloads.notNull("listChildren", "instanceId", instanceId);
        return strings("listChildren", sql.listChildren, instanceId);
    }

    @Override
    public Optional<String> getParentId(String instanceId) {
        String op = "getParentId";
        Payloads.notNull(op, "instanceId", instanceId);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.getParentId)) {
                ps.setString(1, instanceId);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return Optional.ofNullable(rs.getString(1));
                }
            }
        });
    }

    @Override
    public DeleteInstanceResult deleteInstance(String instanceId, boolean force) {
        String op = "deleteInstance";
        Payloads.notNull(op, "instanceId", instanceId);
        Optional<String> parent;
        try {
            parent = getParentId(instanceId);
        } catch (ProviderException e) {
            if (e.sqlState().filter("PD003"::equals).isPresent()) {
                throw new ProviderException(op, "instance '" + instanceId + "' not found", false, "PD003", e);
            }
            throw e;
        }
        if (parent.isPresent()) {
            throw ProviderException.permanent(op, "instance '" + instanceId + "' is a sub-orchestration of '"
                    + parent.get() + "'; delete its root parent instead");
        }
        return deleteInstancesAtomic(getInstanceTree(instanceId).allIds(), force);
    }

    @Override
    public DeleteInstanceResult deleteInstancesAtomic(List<String> ids, boolean force) {
        return deleteInstances("deleteInstancesAtomic", sql.deleteInstancesAtomic, ids, force);
    }

    @Override
    public DeleteInstanceResult deleteInstancesKeepingChildren(List<String> ids, boolean force) {
        return deleteInstances("deleteInstancesKeepingChildren", sql.deleteInstancesKeepingChildren, ids, force);
    }

    private DeleteInstanceResult deleteInstances(String op, String statement, List<String> ids, boolean force) {
        Payloads.notNull(op, "ids", ids);
        if (ids.isEmpty()) {
            return DeleteInstanceResult.NONE;
        }
        String[] idArray = ids.toArray(new String[0]);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(statement)) {
                ps.setArray(1, c.createArrayOf("text", idArray));
                ps.setBoolean(2, force);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new DeleteInstanceResult(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
                }
            }
        });
    }

    @Override
    public DeleteInstanceResult deleteInstanceBulk(InstanceFilter filter) {
        String op = "deleteInstanceBulk";
        Payloads.notNull(op, "filter", filter);
        if (filter.instanceIds().isPresent() && filter.instanceIds().get().isEmpty()) {
            return DeleteInstanceResult.NONE;
        }
        DeleteInstanceResult total = DeleteInstanceResult.NONE;
        for (String root : select(op, sql.selectDeletableRoots, filter)) {
            total = total.plus(deleteInstancesAtomic(getInstanceTree(root).allIds(), true));
        }
        return total;
    }

    @Override
    public PruneResult pruneExecutions(String instanceId, PruneOptions options) {
        String op = "pruneExecutions";
        Payloads.notNull(op, "instanceId", instanceId);
        Payloads.notNull(op, "options", options);
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.pruneExecutions)) {
                ps.setString(1, instanceId);
                if (options.keepLast().isPresent()) {
                    ps.setInt(2, options.keepLast().get());
                } else {
                    ps.setNull(2, Types.INTEGER);
                }
                setLong(ps, 3, options.completedBeforeMs().orElse(null));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new PruneResult(1, rs.getLong(1), rs.getLong(2));
                }
            }
        });
    }

    @Override
    public PruneResult pruneExecutionsBulk(InstanceFilter filter, PruneOptions options) {
        String op = "pruneExecutionsBulk";
        Payloads.notNull(op, "filter", filter);
        Payloads.notNull(op, "options", options);
        if (filter.instanceIds().isPresent() && filter.instanceIds().get().isEmpty()) {
            return new PruneResult(0, 0, 0);
        }
        PruneResult total = new PruneResult(0, 0, 0);
        for (String instance : select(op, sql.selectPrunableInstances, filter)) {
            total = total.plus(pruneExecutions(instance, options));
        }
        return total;
    }

    private List<String> select(String op, String statement, InstanceFilter filter) {
        int limit = filter.limit().orElse(InstanceFilter.DEFAULT_LIMIT);
        if (limit < 0) {
            throw ProviderException.permanent(op, "limit must not be negative, was " + limit);
        }
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(statement)) {
                Array ids = filter.instanceIds().isPresent()
                        ? c.createArrayOf("text", filter.instanceIds().get().toArray(new String[0])) : null;
                if (ids == null) {
                    ps.setNull(1, Types.ARRAY);
                } else {
                    ps.setArray(1, ids);
                }
                setLong(ps, 2, filter.completedBeforeMs().orElse(null));
                ps.setInt(3, limit);
                return collect(ps);
            }
        });
    }

    private List<String> strings(String op, String statement, String param) {
        return db.call(op, c -> {
            try (PreparedStatement ps = c.prepareStatement(statement)) {
                ps.setString(1, param);
                return collect(ps);
            }
        });
    }

    private static List<String> collect(PreparedStatement ps) throws SQLException {
        List<String> out = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    private static void setLong(PreparedStatement ps, int index, Long value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.BIGINT);
        } else {
            ps.setLong(index, value);
        }
    }
}
