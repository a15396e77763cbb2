package io.pgdurable.postgres;

import io.pgdurable.spi.ProviderException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Refuses to start a provider whose pool reaches PostgreSQL through a transaction pooler it was not told about
 * ({@code transactionPooler}): such a pool would run pgjdbc's named server-side statements, the migration lock and
 * Flyway's {@code search_path} on server sessions that other clients get between two of its transactions, and a
 * statement could then run with another client's values.
 *
 * <p>A direct connection is recognised in one statement: the backend that started it sent its process id to the
 * client at login (pgjdbc keeps it, {@link PGConnection#getBackendPID()}), and that backend answers every statement.
 * A pooler or proxy sends a key of its own instead, so the ids differ, and only then does the check look further.
 *
 * <p>The evidence of a transaction pooler is one server session serving two client connections, or one client
 * connection served by two server sessions. Two client connections stay open for the whole check and ask which
 * server session runs each statement ({@code pg_backend_pid()} with the server's start time, so two servers behind
 * one address cannot look alike). A session-mode pooler gives each open client one server session for its whole
 * life, so it never produces the evidence: the check has no false positives. A transaction pooler produces it in the
 * first round when it hands out the most recently used session (PgBouncer's default), otherwise by moving a client
 * to another session while the other holds one in an open transaction. Other clients of the pooler can keep giving
 * the first client its old session back for a few rounds by chance, so the check goes on for up to
 * {@value #ROUNDS} rounds, each a few statements through the pooler, and stops at the first evidence.
 *
 * <p>A check that cannot finish (no connection, a timeout, a pooler that refuses transactions) proves nothing: it
 * is logged and the provider starts, and its pool reports a real connection problem itself.
 */
final class TransactionPoolerCheck {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionPoolerCheck.class);
    static final int ROUNDS = 32;
    /**
     * The server session running the statement: a backend's process id is unique on its server while it runs, and
     * the server's start time tells servers apart.
     */
    private static final String SESSION = "SELECT 'pid ' || pg_backend_pid() || ' of the server started at ' "
            + "|| pg_postmaster_start_time()";

    private TransactionPoolerCheck() {}

    /**
     * Throws a permanent {@link ProviderException} naming {@code transactionPooler} when {@code connections} (which
     * go where the pool's connections go) show a transaction pooler; returns otherwise.
     *
     * @param where the pool's URL, password masked, for the message
     */
    static void refuseUndeclared(DataSource connections, String where) {
        Optional<String> evidence;
        try {
            evidence = evidence(connections);
        } catch (SQLException | RuntimeException e) {
            LOG.info("pgdurable: could not tell whether {} goes through a transaction pooler ({}); starting "
                    + "without that check", where, e.getMessage());
            return;
        }
        if (evidence.isPresent()) {
            throw ProviderException.permanent("connect", "jdbcUrl " + where + " goes through a transaction "
                    + "pooler (such as PgBouncer with pool_mode = transaction): " + evidence.get() + ". Declare it: "
                    + "set transactionPooler(true) and directUrl, a URL that reaches PostgreSQL without the pooler "
                    + "(docs/pgbouncer.md); the provider ran no statement there");
        }
    }

    /** What shows a transaction pooler behind {@code connections}, or empty when nothing did. */
    static Optional<String> evidence(DataSource connections) throws SQLException {
        try (Connection a = connections.getConnection()) {
            a.setAutoCommit(true);
            if (direct(a)) {
                return Optional.empty();
            }
            String first = session(a);
            try (Connection b = connections.getConnection()) {
                b.setAutoCommit(true);
                String firstOfB = session(b);
                if (firstOfB.equals(first)) {
                    return Optional.of(shared(first));
                }
                for (int round = 0; round < ROUNDS; round++) {
                    // The open transaction keeps its server session from the other connection, whatever order the
                    // pooler hands sessions out in. Which connection holds it alternates: a pooler that hands out the
                    // most recently released session would otherwise give each connection its own session back in
                    // every round once they started on different ones.
                    boolean bHolds = round % 2 == 0;
                    Optional<String> found = bHolds ? round(b, firstOfB, a, first) : round(a, first, b, firstOfB);
                    if (found.isPresent()) {
                        return found;
                    }
                }
                return Optional.empty();
            }
        }
    }

    /**
     * One round: {@code holder} runs a statement inside a transaction it keeps open while {@code other} runs one; the
     * evidence, if either was served by a session other than its first or both by the same one.
     */
    private static Optional<String> round(Connection holder, String holderFirst, Connection other, String otherFirst)
            throws SQLException {
        holder.setAutoCommit(false);
        try {
            String held = session(holder);
            if (held.equals(otherFirst)) {
                return Optional.of(shared(held));
            }
            if (!held.equals(holderFirst)) {
                return Optional.of(moved(holderFirst, held));
            }
            String now = session(other);
            if (!now.equals(otherFirst)) {
                return Optional.of(moved(otherFirst, now));
            }
            return Optional.empty();
        } finally {
            holder.rollback();
            holder.setAutoCommit(true);
        }
    }

    /**
     * Whether {@code c} talks to its server backend directly: the process id the backend gave at login is the one
     * answering now. A driver other than pgjdbc cannot tell, which counts as not direct (the rounds decide).
     */
    static boolean direct(Connection c) throws SQLException {
        if (!c.isWrapperFor(PGConnection.class)) {
            return false;
        }
        int loginPid = c.unwrap(PGConnection.class).getBackendPID();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            return rs.next() && rs.getInt(1) == loginPid;
        }
    }

    private static String moved(String from, String to) {
        return "one client connection was served by server session " + from + ", then by " + to;
    }

    private static String shared(String session) {
        return "two open client connections were served by the same server session " + session;
    }

    private static String session(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(SESSION)) {
            if (!rs.next()) {
                throw new SQLException("no row from the session query");
            }
            return rs.getString(1);
        }
    }
}
