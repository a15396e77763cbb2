package io.pgdurable.postgres.processes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.longpoll.ChannelListener;
import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Several processes on one schema: two consumer JVMs (4 long-polling threads each) and two producer JVMs
 * on the test classpath. Every item is written to a ledger exactly once, every process holds exactly one listener
 * connection while it runs (pg_stat_activity, matched to the process by its sockets' local ports), and all of them
 * stop cleanly.
 */
class MultiProcessTest {
    private static final int ITEMS_PER_PRODUCER = 500;
    private static final int PRODUCERS = 2;
    private static final int CONSUMERS = 2;

    @Test
    void producers_and_consumers_in_separate_jvms_deliver_every_item_exactly_once() throws Exception {
        String schema = TestDatabase.newSchemaName("procs");
        List<Child> children = new ArrayList<>();
        try {
            PostgresProvider.create(TestDatabase.config(schema).migrationPolicy(MigrationPolicy.APPLY_ALL)
                    .longPolling(true).build()).close(); // migrated and activated
            try (Connection c = TestDatabase.connect(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE " + Identifiers.quote(schema) + ".ledger (instance_id TEXT NOT NULL, "
                        + "activity_id BIGINT NOT NULL, consumer TEXT NOT NULL)");
            }
            for (int i = 0; i < CONSUMERS; i++) {
                children.add(Child.start("consumer", schema, "consumer-" + i, 4));
            }
            for (Child child : children) {
                child.await("listening");
            }
            for (int i = 0; i < PRODUCERS; i++) {
                children.add(Child.start("producer", schema, "producer-" + i, ITEMS_PER_PRODUCER));
            }
            for (Child child : children.subList(CONSUMERS, children.size())) {
                child.await("produced " + ITEMS_PER_PRODUCER);
            }
            int total = PRODUCERS * ITEMS_PER_PRODUCER;
            awaitLedgerRows(schema, total);

            Map<Long, Integer> listeners = listenerConnectionsByProcess(children);
            for (Child child : children) {
                assertEquals(1, listeners.getOrDefault(child.process.pid(), 0),
                        child.name + " holds one listener connection: " + listeners);
            }

            for (Child child : children) {
                child.stop();
            }
            long consumedByProcesses = 0;
            for (Child child : children.subList(0, CONSUMERS)) {
                String line = child.await("consumed ");
                long n = Long.parseLong(line.substring("consumed ".length()).trim());
                assertTrue(n > 0, child.name + " consumed something: " + line);
                consumedByProcesses += n;
            }
            for (Child child : children) {
                assertTrue(child.process.waitFor(30, TimeUnit.SECONDS), child.name + " exits");
                assertEquals(0, child.process.exitValue(), child.name + " output: " + child.output);
            }
            assertEquals(total, consumedByProcesses, "acks reported by the consumers");
            try (Connection c = TestDatabase.connect(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT count(*), count(DISTINCT (instance_id, activity_id)), "
                         + "(SELECT count(*) FROM " + Identifiers.quote(schema) + ".worker_queue) FROM "
                         + Identifiers.quote(schema) + ".ledger")) {
                rs.next();
                assertEquals(total, rs.getLong(1), "ledger rows: each item handled once");
                assertEquals(total, rs.getLong(2), "distinct items in the ledger: none lost");
                assertEquals(0, rs.getLong(3), "the worker queue is empty");
            }
        } finally {
            for (Child child : children) {
                child.process.destroyForcibly();
            }
            TestDatabase.dropSchema(schema);
        }
    }

    private static void awaitLedgerRows(String schema, int total) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
        long rows = 0;
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + Identifiers.quote(schema)
                     + ".ledger")) {
            while (System.nanoTime() < deadline) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    rows = rs.getLong(1);
                }
                if (rows >= total) {
                    return;
                }
                TimeUnit.MILLISECONDS.sleep(100);
            }
        }
        throw new AssertionError("the ledger had " + rows + " of " + total + " rows after 180 s");
    }

    /** Listener backends per child process id, matched by the local ports of the child's TCP sockets. */
    private static Map<Long, Integer> listenerConnectionsByProcess(List<Child> children)
            throws IOException, SQLException {
        Map<Integer, Long> portToPid = new HashMap<>();
        for (Child child : children) {
            for (int port : localPorts(child.process.pid())) {
                portToPid.put(port, child.process.pid());
            }
        }
        Map<Long, Integer> counts = new HashMap<>();
        try (Connection c = TestDatabase.connect();
             PreparedStatement ps = c.prepareStatement("SELECT client_port FROM pg_stat_activity "
                     + "WHERE application_name = ? AND client_port IS NOT NULL")) {
            ps.setString(1, ChannelListener.APPLICATION_NAME);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Long pid = portToPid.get(rs.getInt(1));
                    if (pid != null) {
                        counts.merge(pid, 1, Integer::sum);
                    }
                }
            }
        }
        return counts;
    }

    /** The local ports of a process's TCP sockets, from /proc (Linux, as CI). */
    private static Set<Integer> localPorts(long pid) throws IOException {
        Set<String> inodes = new HashSet<>();
        try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring(8, target.length() - 1));
                    }
                } catch (IOException closedMeanwhile) {
                    // an fd closed between list and read: not a connection we look for
                }
            }
        }
        Set<Integer> ports = new HashSet<>();
        for (String table : List.of("tcp", "tcp6")) {
            Path p = Path.of("/proc", Long.toString(pid), "net", table);
            if (!Files.exists(p)) {
                continue;
            }
            List<String> rows = Files.readAllLines(p);
            for (String line : rows.subList(1, rows.size())) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9 && inodes.contains(f[9])) {
                    String local = f[1];
                    ports.add(Integer.parseInt(local.substring(local.lastIndexOf(':') + 1), 16));
                }
            }
        }
        return ports;
    }

    /** A child JVM and the lines it printed. */
    private static final class Child {
        final String name;
        final Process process;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        final StringBuffer output = new StringBuffer();
        private final OutputStream stdin;

        private Child(String name, Process process) {
            this.name = name;
            this.process = process;
            this.stdin = process.getOutputStream();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        output.append(line).append('\n');
                        lines.add(line);
                    }
                } catch (IOException ended) {
                    // the process ended
                }
            }, "read-" + name);
            reader.setDaemon(true);
            reader.start();
        }

        static Child start(String mode, String schema, String name, int count) throws IOException {
            String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
            Process p = new ProcessBuilder(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
                    QueueProcess.class.getName(), mode, TestDatabase.url(), schema, name, Integer.toString(count))
                    .redirectErrorStream(true)
                    .start();
            return new Child(name, p);
        }

        /**
         * The first line starting with {@code prefix} (180 s at most: a JVM's start, its provider and listener take
         * 20 s and more while the rest of the suite loads both cores); a {@code failed:} line fails at once.
         */
        String await(String prefix) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            while (true) {
                String line = lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (line == null) {
                    throw new AssertionError(name + " printed no '" + prefix + "' within 180 s; output:\n" + output);
                }
                if (line.startsWith("failed:")) {
                    throw new AssertionError(name + " " + line + "\n" + output);
                }
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
        }

        void stop() throws IOException {
            stdin.write("stop\n".getBytes(StandardCharsets.UTF_8));
            stdin.flush();
        }
    }
}
