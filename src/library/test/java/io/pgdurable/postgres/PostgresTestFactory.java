package io.pgdurable.postgres;

import io.pgdurable.conformance.ProviderFactory;
import io.pgdurable.spi.OrchestrationProvider;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Binds the conformance kit to {@link PostgresProvider}: each created provider gets a schema of its own with empty
 * tables, either freshly prepared or one that an earlier test left unchanged, emptied ({@link SchemaPool}).
 */
public class PostgresTestFactory implements ProviderFactory {
    private final List<OrchestrationProvider> providers = new ArrayList<>();
    private final List<String> schemas = new ArrayList<>();
    private String currentSchema;

    /** Hook for long-poll bindings to adjust the configuration. */
    protected PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return builder;
    }

    @Override
    public synchronized OrchestrationProvider createProvider() {
        String kind = schemaKind();
        String reused = SchemaPool.take(kind);
        currentSchema = reused != null ? reused : TestDatabase.newSchemaName("conf");
        schemas.add(currentSchema);
        if (reused == null) {
            prepareSchema(currentSchema);
        }
        OrchestrationProvider p = open(currentSchema);
        if (reused == null) {
            SchemaPool.noteFresh(kind, currentSchema);
        }
        return p;
    }

    /**
     * Which schemas this factory's providers can start on: prepared by {@link #prepareSchema} and opened by a
     * provider that activates long polling or one that does not. Schemas of one kind go from test to test.
     */
    private String schemaKind() {
        String kind = SchemaPool.kindOf(configure(TestDatabase.config("conf_kind")).build());
        return kind.replaceFirst("^superuser", schemaRecipe());
    }

    /** Names what {@link #prepareSchema} does; a binding that overrides it gives its schemas a kind of their own. */
    protected String schemaRecipe() {
        return "superuser";
    }

    @Override
    public synchronized OrchestrationProvider createPeerProvider() {
        if (currentSchema == null) {
            throw new IllegalStateException("createProvider() first");
        }
        return open(currentSchema);
    }

    private OrchestrationProvider open(String schema) {
        PostgresProvider p = PostgresProvider.create(configure(TestDatabase.config(schema)).build());
        providers.add(p);
        return wrap(p);
    }

    /** Hook for bindings that set a schema up before its first provider opens it (roles, grants, migrations). */
    protected void prepareSchema(String schema) {}

    /** Hook for bindings that drive the provider through other operations (the provider stays closed by us). */
    protected OrchestrationProvider wrap(PostgresProvider provider) {
        return provider;
    }

    @Override
    public void corruptInstanceHistory(String instance) {
        update("UPDATE " + Identifiers.quote(currentSchema) + ".history SET event_data = '{not json' "
                + "WHERE instance_id = ?", instance);
    }

    @Override
    public int getMaxAttemptCount(String instance) {
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT COALESCE(max(attempt_count), 0) FROM "
                     + Identifiers.quote(currentSchema) + ".orchestrator_queue WHERE instance_id = ?")) {
            ps.setString(1, instance);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private void update(String sql, String param) {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, param);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public synchronized void close() {
        for (OrchestrationProvider p : providers) {
            p.close();
        }
        providers.clear();
        String kind = schemas.isEmpty() ? null : schemaKind();
        for (String s : schemas) {
            SchemaPool.release(kind, s);
        }
        schemas.clear();
    }
}
