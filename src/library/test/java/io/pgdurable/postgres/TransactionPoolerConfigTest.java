package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.spi.ProviderException;
import java.sql.SQLException;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The {@code transactionPooler} and {@code directUrl} settings when the configuration is built (no database needed),
 * and the hint that pgjdbc's colliding statement names get. The behaviour behind a real PgBouncer is in
 * {@code io.pgdurable.postgres.pgbouncer}.
 */
class TransactionPoolerConfigTest {
    private static final String POOLER = "jdbc:postgresql://127.0.0.1:6439/app?user=app";
    private static final String DIRECT = "jdbc:postgresql://127.0.0.1:5432/app?user=app";

    private static String refused(UnaryOperator<PostgresProviderConfig.Builder> tune) {
        return assertThrows(IllegalArgumentException.class,
                () -> tune.apply(PostgresProviderConfig.builder().jdbcUrl(POOLER)).build()).getMessage();
    }

    @Test
    void a_transaction_pooler_needs_a_direct_url_and_the_error_names_the_settings() {
        String m = refused(b -> b.transactionPooler(true));
        assertTrue(m.startsWith("transactionPooler needs directUrl"), m);
        assertFalse(m.contains("listenerUrl"), "no listener without long polling: " + m);
        String lp = refused(b -> b.transactionPooler(true).longPolling(true));
        assertTrue(lp.startsWith("transactionPooler needs directUrl") && lp.contains("listenerUrl"), lp);
        String listenerOnly = refused(b -> b.transactionPooler(true).longPolling(true).listenerUrl(DIRECT));
        assertTrue(listenerOnly.startsWith("transactionPooler needs directUrl"), "migrations need it too: "
                + listenerOnly);
        IllegalArgumentException ds = assertThrows(IllegalArgumentException.class, () -> PostgresProviderConfig
                .builder().dataSource(new PGSimpleDataSource()).transactionPooler(true).build());
        assertTrue(ds.getMessage().startsWith("transactionPooler needs directUrl"), ds.getMessage());
    }

    @Test
    void direct_urls_that_are_the_pooled_url_or_unreadable_are_refused_naming_the_setting() {
        assertTrue(refused(b -> b.transactionPooler(true).directUrl(POOLER))
                .startsWith("directUrl is the same URL as jdbcUrl"));
        assertTrue(refused(b -> b.transactionPooler(true).directUrl(DIRECT).longPolling(true).listenerUrl(POOLER))
                .startsWith("listenerUrl is the same URL as jdbcUrl"));
        assertTrue(refused(b -> b.directUrl("postgres://127.0.0.1/app"))
                .startsWith("directUrl must start with 'jdbc:postgresql:'"));
        assertTrue(refused(b -> b.directUrl("jdbc:postgresql://127.0.0.1:54x32/app"))
                .startsWith("directUrl is not a URL the PostgreSQL driver can read"));
    }

    @Test
    void a_pool_url_asking_for_server_prepared_statements_is_refused() {
        String m = assertThrows(IllegalArgumentException.class, () -> PostgresProviderConfig.builder()
                .jdbcUrl(POOLER + "&prepareThreshold=3").transactionPooler(true).directUrl(DIRECT).build())
                .getMessage();
        assertTrue(m.startsWith("jdbcUrl sets prepareThreshold=3"), m);
        PostgresProviderConfig ok = PostgresProviderConfig.builder().jdbcUrl(POOLER + "&prepareThreshold=0")
                .transactionPooler(true).directUrl(DIRECT).build();
        assertTrue(ok.transactionPooler());
        // without a pooler the parameter is the user's business
        PostgresProviderConfig.builder().jdbcUrl(POOLER + "&prepareThreshold=3").build();
    }

    @Test
    void the_listener_uses_listener_url_then_direct_url_then_the_pool_url() {
        PostgresProviderConfig.Builder b = PostgresProviderConfig.builder().jdbcUrl(POOLER).longPolling(true);
        assertEquals(POOLER, b.build().effectiveListenerUrl());
        assertEquals(DIRECT, b.transactionPooler(true).directUrl(DIRECT).build().effectiveListenerUrl());
        String session = "jdbc:postgresql://127.0.0.1:6440/app?user=app";
        assertEquals(session, b.listenerUrl(session).build().effectiveListenerUrl());
        // a DataSource with long polling: directUrl is enough for the listener
        PostgresProviderConfig ds = PostgresProviderConfig.builder().dataSource(new PGSimpleDataSource())
                .longPolling(true).directUrl(DIRECT).build();
        assertEquals(DIRECT, ds.effectiveListenerUrl());
    }

    @Test
    void to_string_shows_the_setting_and_hides_the_direct_password() {
        String s = PostgresProviderConfig.builder().jdbcUrl(POOLER).transactionPooler(true)
                .directUrl(DIRECT + "&password=hunter2").build().toString();
        assertTrue(s.contains("transactionPooler=true") && s.contains("directUrl="), s);
        assertFalse(s.contains("hunter2"), s);
    }

    @Test
    void colliding_pgjdbc_statement_names_get_a_hint_naming_the_setting() {
        for (String[] error : new String[][] {{"42P05", "prepared statement \"S_3\" already exists"},
                {"26000", "prepared statement \"S_3\" does not exist"},
                {"08P01", "bind message supplies 5 parameters, but prepared statement \"S_2\" requires 0"}}) {
            ProviderException e = SqlErrors.translate("fetchWorkItem", new SQLException(error[1], error[0]));
            assertTrue(e.getMessage().contains("set transactionPooler(true)"), e.getMessage());
        }
        ProviderException other = SqlErrors.translate("op",
                new SQLException("prepared statement \"mine\" already exists", "42P05"));
        assertFalse(other.getMessage().contains("transactionPooler"), other.getMessage());
    }
}
