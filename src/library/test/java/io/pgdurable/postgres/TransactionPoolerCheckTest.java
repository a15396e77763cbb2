package io.pgdurable.postgres;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.pgbouncer.PgBouncer;
import io.pgdurable.spi.ProviderException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link TransactionPoolerCheck} against a real PgBouncer in transaction mode (always found, also while other clients
 * keep its server sessions busy), a second one in session mode and the server itself (never found), through the
 * connections the provider gives it ({@link ProviderConnections#poolerCheckSource}).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TransactionPoolerCheckTest {
    private static final int REPEATS = 10;

    @Test
    void a_transaction_pooler_is_found_every_time() throws SQLException {
        DataSource pooled = checkSource(PgBouncer.url());
        for (int i = 0; i < REPEATS; i++) {
            Optional<String> evidence = TransactionPoolerCheck.evidence(pooled);
            assertTrue(evidence.isPresent(), "check " + i + " through the transaction pooler found nothing");
            assertTrue(evidence.get().contains("server session pid "), evidence.get());
        }
    }

    /** Other clients take the sessions the check's connections release: the check still finds the pooler. */
    @Test
    void a_transaction_pooler_is_found_while_other_clients_keep_it_busy() throws Exception {
        DataSource pooled = checkSource(PgBouncer.url());
        int clients = 4;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong transactions = new AtomicLong();
        CountDownLatch running = new CountDownLatch(clients);
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        List<Future<?>> busy = new ArrayList<>();
        try {
            for (int t = 0; t < clients; t++) {
                busy.add(pool.submit(() -> {
                    Properties unprepared = new Properties();
                    unprepared.setProperty("prepareThreshold", "0");
                    try (Connection c = DriverManager.getConnection(PgBouncer.url(), unprepared);
                         Statement st = c.createStatement()) {
                        c.setAutoCommit(false);
                        boolean first = true;
                        while (!stop.get()) {
                            st.execute("SELECT pg_backend_pid()");
                            c.commit();
                            transactions.incrementAndGet();
                            if (first) {
                                running.countDown();
                                first = false;
                            }
                        }
                    }
                    return null;
                }));
            }
            assertTrue(running.await(30, TimeUnit.SECONDS), "the other clients started");
            long before = transactions.get();
            for (int i = 0; i < REPEATS; i++) {
                assertTrue(TransactionPoolerCheck.evidence(pooled).isPresent(),
                        "check " + i + " through the busy transaction pooler found nothing");
            }
            assertTrue(transactions.get() > before, "the other clients ran transactions during the checks");
        } finally {
            stop.set(true);
            for (Future<?> f : busy) {
                f.get(30, TimeUnit.SECONDS); // a client's failure fails the test
            }
            pool.shutdown();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the other clients ended");
        }
    }

    @Test
    void the_server_itself_is_never_taken_for_one() throws SQLException {
        DataSource direct = checkSource(TestDatabase.url());
        for (int i = 0; i < REPEATS; i++) {
            assertEquals(Optional.empty(), TransactionPoolerCheck.evidence(direct), "check " + i + " direct");
        }
    }

    @Test
    void a_session_mode_pooler_is_never_taken_for_one() throws SQLException {
        DataSource session = checkSource(PgBouncer.sessionModeUrl());
        for (int i = 0; i < REPEATS; i++) {
            assertEquals(Optional.empty(), TransactionPoolerCheck.evidence(session), "check " + i
                    + " through the session pooler");
        }
    }

    /** The one-statement shortcut: only a connection straight to the server is recognised as direct. */
    @Test
    void only_a_connection_straight_to_the_server_is_recognised_as_direct() throws SQLException {
        for (int i = 0; i < REPEATS; i++) {
            try (Connection c = checkSource(TestDatabase.url()).getConnection()) {
                assertTrue(TransactionPoolerCheck.direct(c), "check " + i + " direct");
            }
            try (Connection c = checkSource(PgBouncer.sessionModeUrl()).getConnection()) {
                assertFalse(TransactionPoolerCheck.direct(c), "check " + i + " through the session pooler");
            }
            try (Connection c = checkSource(PgBouncer.url()).getConnection()) {
                assertFalse(TransactionPoolerCheck.direct(c), "check " + i + " through the transaction pooler");
            }
        }
    }

    @Test
    void the_refusal_is_permanent_and_names_the_setting_and_the_page_that_explains_it() {
        ProviderException e = assertThrows(ProviderException.class, () -> TransactionPoolerCheck.refuseUndeclared(
                checkSource(PgBouncer.url()), "the-pool-url"));
        assertFalse(e.retryable(), e.getMessage());
        assertTrue(e.getMessage().contains("the-pool-url goes through a transaction pooler"), e.getMessage());
        assertTrue(e.getMessage().contains("set transactionPooler(true) and directUrl"), e.getMessage());
        assertTrue(e.getMessage().contains("docs/pgbouncer.md"), e.getMessage());
        assertDoesNotThrow(() -> TransactionPoolerCheck.refuseUndeclared(checkSource(TestDatabase.url()), "direct"));
    }

    /** No answer proves nothing: the start goes on, and the pool reports the connection problem itself. */
    @Test
    void a_check_that_cannot_connect_does_not_refuse() throws IOException {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        String nowhere = "jdbc:postgresql://127.0.0.1:" + closedPort + "/test?user=postgres";
        assertThrows(SQLException.class, () -> TransactionPoolerCheck.evidence(checkSource(nowhere)));
        assertDoesNotThrow(() -> TransactionPoolerCheck.refuseUndeclared(checkSource(nowhere), "nowhere"));
    }

    private static DataSource checkSource(String url) {
        return ProviderConnections.poolerCheckSource(PostgresProviderConfig.builder().jdbcUrl(url)
                .schema("pooler_check").build());
    }
}
