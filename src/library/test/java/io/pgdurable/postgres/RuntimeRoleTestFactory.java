package io.pgdurable.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The conformance kit's factory with least privilege (docs/roles.md): each schema is created for an owner role,
 * which grants the runtime role its privileges (step 2 of the page), migrates and activates it; every provider the
 * tests drive then connects as the runtime role with {@link MigrationPolicy#VERIFY_ONLY} and long polling on.
 */
public class RuntimeRoleTestFactory extends LongPollTestFactory {

    @Override
    protected void prepareSchema(String schema) {
        TestRoles.ensureTestRoles();
        String s = Identifiers.quote(schema);
        String runtime = Identifiers.quote(TestRoles.RUNTIME);
        try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA " + s + " AUTHORIZATION " + Identifiers.quote(TestRoles.OWNER));
        } catch (SQLException e) {
            throw new IllegalStateException("could not create schema " + schema + " for the owner role", e);
        }
        try (Connection c = TestRoles.connect(TestRoles.OWNER); Statement st = c.createStatement()) {
            st.execute("GRANT USAGE ON SCHEMA " + s + " TO " + runtime);
            st.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA " + s
                    + " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + runtime);
            st.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA " + s
                    + " GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO " + runtime);
        } catch (SQLException e) {
            throw new IllegalStateException("the owner role could not grant on " + schema, e);
        }
        PostgresProviderConfig owner = TestDatabase.config(schema).jdbcUrl(TestRoles.url(TestRoles.OWNER))
                .migrationPolicy(MigrationPolicy.APPLY_ALL).longPolling(true).poolSize(2).build();
        PostgresProvider.create(owner).close(); // migrates and activates as the owner
    }

    @Override
    protected String schemaRecipe() {
        return "owner-and-runtime-roles";
    }

    @Override
    protected PostgresProviderConfig.Builder configure(PostgresProviderConfig.Builder builder) {
        return super.configure(builder).jdbcUrl(TestRoles.url(TestRoles.RUNTIME))
                .migrationPolicy(MigrationPolicy.VERIFY_ONLY);
    }
}
