package io.pgdurable.postgres.batch;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The schemas and providers one batch test opens: {@link #close} (the test's {@code @AfterEach}) closes the providers,
 * newest first, and then drops the schemas, so no test leaves a pool or a schema behind.
 */
final class Hubs {
    private final String prefix;
    private final List<String> schemas = new ArrayList<>();
    private final List<PostgresProvider> providers = new ArrayList<>();

    /** {@code prefix} starts the name of every schema these hubs create (see {@link TestDatabase#newSchemaName}). */
    Hubs(String prefix) {
        this.prefix = prefix;
    }

    /** A new schema name, dropped by {@link #close}; the first provider opened on it migrates it. */
    String newSchema() {
        String schema = TestDatabase.newSchemaName(prefix);
        schemas.add(schema);
        return schema;
    }

    /** A provider on {@code schema} with the test configuration, as {@code tune} changes it. */
    PostgresProvider open(String schema, UnaryOperator<PostgresProviderConfig.Builder> tune) {
        PostgresProvider p = PostgresProvider.create(tune.apply(TestDatabase.config(schema)).build());
        providers.add(p);
        return p;
    }

    /** A provider on a new schema. */
    PostgresProvider open(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        return open(newSchema(), tune);
    }

    void close() {
        for (int i = providers.size() - 1; i >= 0; i--) {
            providers.get(i).close();
        }
        providers.clear();
        schemas.forEach(TestDatabase::dropSchema);
        schemas.clear();
    }
}
