package io.pgdurable.postgres.pgbouncer;

import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.postgres.TestDatabase;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A PgBouncer in transaction mode in front of the test database, for the tests that route a provider's pool through
 * one. {@code PGDURABLE_PGBOUNCER_URL} (environment or system property; {@code .ci/run} exports it) names a running
 * one; otherwise one is started from the {@code pgbouncer} binary for this JVM, installed with apt-get first when it is
 * missing and the tests run as root. It never skips: without a PgBouncer the tests fail, naming what to install.
 *
 * <p>Either way the fixture checks, once, that the URL reaches the same server and database as
 * {@link TestDatabase#url()} and that it really pools by transaction, so a misconfigured run cannot pass by talking to
 * PostgreSQL directly.
 *
 * <p>{@link #sessionModeUrl()} starts a second one in session mode, for what must hold behind a session pooler.
 */
public final class PgBouncer {
    public static final String URL_SETTING = "PGDURABLE_PGBOUNCER_URL";
    /** Server connections per database and user in the PgBouncer this fixture starts. */
    static final int POOL_SIZE = 20;

    private static volatile String url;
    private static volatile String sessionModeUrl;

    private PgBouncer() {}

    /** A JDBC URL through the PgBouncer to the test database (started on first use). */
    public static String url() {
        String u = url;
        if (u == null) {
            synchronized (PgBouncer.class) {
                if (url == null) {
                    // A PgBouncer named by URL sits in front of the machine's server, not in front of an embedded
                    // server of a chosen major; that one gets a PgBouncer of this JVM's own.
                    String configured = TestDatabase.chosenMajor() != null ? null : setting(URL_SETTING);
                    String resolved = configured != null ? configured
                            : Started.start(TestDatabase.url(), "transaction");
                    checkSameDatabase(resolved);
                    checkPoolsByTransaction(resolved);
                    url = resolved;
                }
                u = url;
            }
        }
        return u;
    }

    /**
     * A JDBC URL through a second PgBouncer, in session mode, in front of the test database: always one this JVM
     * starts from the {@code pgbouncer} binary (the transaction-mode one of {@code PGDURABLE_PGBOUNCER_URL} cannot
     * change its mode), started on first use. Fails, never skips, when the binary is missing.
     */
    public static String sessionModeUrl() {
        String u = sessionModeUrl;
        if (u == null) {
            synchronized (PgBouncer.class) {
                if (sessionModeUrl == null) {
                    String started = Started.start(TestDatabase.url(), "session");
                    checkSameDatabase(started);
                    sessionModeUrl = started;
                }
                u = sessionModeUrl;
            }
        }
        return u;
    }

    /** The provider's pool through PgBouncer, declared as a transaction pooler; migrations and listener direct. */
    public static PostgresProviderConfig.Builder route(PostgresProviderConfig.Builder builder) {
        return builder.jdbcUrl(url()).transactionPooler(true).directUrl(TestDatabase.url());
    }

    private static String setting(String name) {
        String v = System.getProperty(name);
        if (v == null || v.isBlank()) {
            v = System.getenv(name);
        }
        return v == null || v.isBlank() ? null : v;
    }

    /** Identifies a server by its port, start time and database: equal through the pooler and directly. */
    private static final String WHO = "SELECT current_database() || '@' || coalesce(inet_server_port(), 0) || '/' "
            + "|| pg_postmaster_start_time()";

    private static void checkSameDatabase(String pooled) {
        String direct = identify(TestDatabase.url());
        String through = identify(pooled);
        if (!direct.equals(through)) {
            throw new IllegalStateException(URL_SETTING + " leads to " + through + " but the tests' database ("
                    + "PGDURABLE_TEST_URL or the embedded one) is " + direct + ": point the PgBouncer at it");
        }
    }

    private static String identify(String jdbcUrl) {
        try (Connection c = DriverManager.getConnection(jdbcUrl); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(WHO)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot query " + JdbcUrls.redact(jdbcUrl) + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * Proof of transaction pooling: after one client's transaction ends, another client's open transaction can be
     * given the very server session the first one used. A direct connection or a session pooler never hands one
     * client's session to another while it is connected. With PgBouncer's default most-recently-used order the first
     * try succeeds; a few more cover round robin.
     */
    static void checkPoolsByTransaction(String pooled) {
        List<Connection> holders = new ArrayList<>();
        try (Connection first = DriverManager.getConnection(pooled)) {
            int firstBackend = backend(first);
            for (int i = 0; i < 5; i++) {
                Connection other = DriverManager.getConnection(pooled);
                holders.add(other);
                other.setAutoCommit(false);
                if (backend(other) == firstBackend) {
                    return;
                }
            }
            throw new IllegalStateException(JdbcUrls.redact(pooled) + " does not pool by "
                    + "transaction: five other clients' transactions never got the server session of a client that "
                    + "had finished its statement; the PgBouncer must run with pool_mode = transaction");
        } catch (SQLException e) {
            throw new IllegalStateException("cannot probe " + JdbcUrls.redact(pooled) + ": "
                    + e.getMessage(), e);
        } finally {
            for (Connection c : holders) {
                try {
                    c.rollback();
                    c.close();
                } catch (SQLException ignored) {
                    // the probe's answer is already known
                }
            }
        }
    }

    private static int backend(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** A PgBouncer this JVM started, stopped (by its own process handle) when the JVM exits. */
    static final class Started {
        private static final List<String> BINARIES = List.of("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer",
                "/usr/local/bin/pgbouncer", "/usr/local/sbin/pgbouncer");
        private static final String MISSING = "the PgBouncer tests need Debian's pgbouncer package (apt-get install "
                + "pgbouncer) or " + URL_SETTING + " naming a PgBouncer in transaction mode in front of the test "
                + "database";

        /** @param poolMode PgBouncer's {@code pool_mode}: {@code transaction} or {@code session} */
        static String start(String databaseUrl, String poolMode) {
            Path binary = binary();
            Properties db = org.postgresql.Driver.parseURL(databaseUrl, null);
            if (db == null) {
                throw new IllegalStateException("cannot read the test database URL");
            }
            String host = db.getProperty("PGHOST", "127.0.0.1").split(",")[0];
            String port = db.getProperty("PGPORT", "5432").split(",")[0];
            String database = db.getProperty("PGDBNAME");
            String user = db.getProperty("user", System.getProperty("user.name"));
            String password = db.getProperty("password", "");
            try {
                Path dir = Files.createTempDirectory("pgdurable-pgbouncer");
                int listen = freePort();
                Path users = dir.resolve("users.txt");
                Files.writeString(users, quoted(user) + " " + quoted(password) + "\n", StandardCharsets.UTF_8);
                Path ini = dir.resolve("pgbouncer.ini");
                Files.writeString(ini, String.join("\n",
                        "[databases]",
                        "* = host=" + host + " port=" + port,
                        "[pgbouncer]",
                        "listen_addr = 127.0.0.1",
                        "listen_port = " + listen,
                        "unix_socket_dir =",
                        "auth_type = trust",
                        "auth_file = " + users,
                        "pool_mode = " + poolMode,
                        "default_pool_size = " + POOL_SIZE,
                        "server_idle_timeout = 10",
                        "max_client_conn = 500",
                        "ignore_startup_parameters = extra_float_digits",
                        "logfile =",
                        "pidfile =",
                        ""), StandardCharsets.UTF_8);
                // PgBouncer refuses to run as root; as root it runs as nobody, who must read the two files.
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
                Files.setPosixFilePermissions(users, PosixFilePermissions.fromString("rw-r--r--"));
                Files.setPosixFilePermissions(ini, PosixFilePermissions.fromString("rw-r--r--"));
                List<String> command = new ArrayList<>();
                if (isRoot()) {
                    command.addAll(List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"));
                }
                command.add(binary.toString());
                command.add(ini.toString());
                Path log = dir.resolve("pgbouncer.log");
                Process process = new ProcessBuilder(command).redirectErrorStream(true)
                        .redirectOutput(log.toFile()).start();
                Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(process, dir), "pgbouncer-stop"));
                String url = "jdbc:postgresql://127.0.0.1:" + listen + "/" + database + "?user=" + user
                        + (password.isEmpty() ? "" : "&password=" + password);
                awaitReady(process, url, log);
                System.out.println("[pgbouncer] started pid " + process.pid() + " on 127.0.0.1:" + listen
                        + " in front of " + host + ":" + port + " (" + poolMode + " mode)");
                return url;
            } catch (IOException e) {
                throw new IllegalStateException("could not start PgBouncer: " + e.getMessage(), e);
            }
        }

        private static Path binary() {
            Path found = find();
            if (found != null) {
                return found;
            }
            if (!isRoot()) {
                throw new IllegalStateException(MISSING + "; not running as root, so it was not installed here");
            }
            String output = run(List.of("apt-get", "install", "-y", "pgbouncer"));
            if (find() == null) {
                // a fresh machine may not have read the package lists yet
                output = run(List.of("apt-get", "update")) + run(List.of("apt-get", "install", "-y", "pgbouncer"));
            }
            found = find();
            if (found == null) {
                throw new IllegalStateException(MISSING + "; apt-get install pgbouncer did not provide it:\n"
                        + tail(output));
            }
            return found;
        }

        private static Path find() {
            List<String> candidates = new ArrayList<>(BINARIES);
            String path = System.getenv("PATH");
            if (path != null) {
                for (String d : path.split(":")) {
                    candidates.add(d + "/pgbouncer");
                }
            }
            for (String c : candidates) {
                Path p = Path.of(c);
                if (Files.isExecutable(p)) {
                    return p;
                }
            }
            return null;
        }

        private static boolean isRoot() {
            return "root".equals(System.getProperty("user.name"));
        }

        private static String run(List<String> command) {
            try {
                ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
                pb.environment().put("DEBIAN_FRONTEND", "noninteractive");
                Process p = pb.start();
                p.getOutputStream().close();
                byte[] out = p.getInputStream().readAllBytes();
                if (!p.waitFor(10, TimeUnit.MINUTES)) {
                    p.destroyForcibly();
                }
                return new String(out, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return String.join(" ", command) + ": " + e.getMessage() + "\n";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while installing pgbouncer", e);
            }
        }

        private static void awaitReady(Process process, String url, Path log) throws IOException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            SQLException last = null;
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("PgBouncer exited with " + process.exitValue() + ":\n"
                            + tail(Files.readString(log)));
                }
                try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
                    st.execute("SELECT 1");
                    return;
                } catch (SQLException e) {
                    last = e;
                }
                try {
                    TimeUnit.MILLISECONDS.sleep(100); // polling a process we cannot otherwise observe
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            process.destroy();
            throw new IllegalStateException("PgBouncer did not answer within 20 s (" + (last == null ? "" :
                    last.getMessage()) + "):\n" + tail(Files.readString(log)));
        }

        private static void stop(Process process, Path dir) {
            process.destroy(); // SIGTERM to the process this JVM started, nothing else
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            try (var files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    Files.deleteIfExists(f);
                }
                Files.deleteIfExists(dir);
            } catch (IOException ignored) {
                // a temporary directory left behind
            }
        }

        private static int freePort() throws IOException {
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                return s.getLocalPort();
            }
        }

        private static String quoted(String s) {
            return '"' + s.replace("\"", "\"\"") + '"';
        }

        private static String tail(String text) {
            return text.length() <= 4000 ? text : text.substring(text.length() - 4000);
        }
    }
}
