package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationFactory;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code pgdurable serve} without {@code --db}, run as a user runs it: in a JVM of its own (this test's classpath),
 * stopped by SIGTERM or killed. What it keeps in its data directory survives the restart; a second serve on the
 * directory is refused in one line; other commands share the running server; a server left by a killed serve does
 * not block the next start.
 */
class EmbeddedServeRestartTest {
    private static final Pattern LISTENING = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");
    private static final Duration START = Duration.ofSeconds(120);
    private static final Duration STOP = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private final List<ServeProcess> started = new ArrayList<>();
    private final Map<String, Integer> activityRuns = new ConcurrentHashMap<>();

    @AfterEach
    void stopWhatWasStarted() throws Exception {
        for (ServeProcess p : started) {
            p.sigterm();
            if (!p.awaitExit()) {
                p.process.destroyForcibly();
            }
        }
        // A server left by a serve this test killed is this test's to stop.
        try (var dirs = Files.list(dir)) {
            for (Path d : dirs.toList()) {
                Optional<ProcessHandle> left = postgresOf(d);
                if (left.isPresent()) {
                    left.get().destroy();
                    assertTrue(eventually(STOP, () -> !running(left.get())), "could not stop " + left.get());
                }
            }
        }
    }

    @Test
    void an_orchestration_started_before_a_sigterm_completes_after_the_restart() throws Exception {
        Path data = dir.resolve("restart");
        ServeProcess first = serve("--data-dir", data.toString(), "--port", "0");
        int port = first.awaitPort();
        String id;
        Worker worker = new Worker(port);
        try (Client client = new Client(port)) {
            id = client.dt.scheduleNewOrchestrationInstance("Resumable");
            String instance = id;
            assertTrue(eventually(Duration.ofSeconds(60), () -> {
                OrchestrationMetadata m = client.dt.getInstanceMetadata(instance, true);
                return m.isInstanceFound() && "waiting".equals(m.readCustomStatusAs(String.class));
            }), "the orchestration did not reach its wait: " + first.output());
        } finally {
            worker.close();
        }
        first.sigterm();
        assertTrue(first.awaitExit(), "serve ignored SIGTERM: " + first.output());
        assertTrue(first.stdout().contains("Durable Task sidecar stopped"), first.output());
        assertFalse(Files.exists(data.resolve("pgdata/postmaster.pid")), "serve exited with its PostgreSQL running");

        ServeProcess second = serve("--data-dir", data.toString(), "--port", "0");
        int port2 = second.awaitPort();
        try (Client client = new Client(port2)) {
            OrchestrationMetadata kept = client.dt.getInstanceMetadata(id, true);
            assertTrue(kept.isInstanceFound(), "the instance was lost across the restart");
            assertEquals(OrchestrationRuntimeStatus.RUNNING, kept.getRuntimeStatus());
            assertEquals("waiting", kept.readCustomStatusAs(String.class));
            Worker worker2 = new Worker(port2);
            try {
                client.dt.raiseEvent(id, "go", "after");
                OrchestrationMetadata done = client.dt.waitForInstanceCompletion(id, Duration.ofSeconds(60), true);
                assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus(), second.output());
                assertEquals("before!,after!", done.readOutputAs(String.class));
            } finally {
                worker2.close();
            }
        }
        assertEquals(Map.of("before", 1, "after", 1), activityRuns, "each activity ran once across the restart");
    }

    @Test
    void a_second_serve_is_refused_in_one_line_while_other_commands_share_the_running_server() throws Exception {
        Path data = dir.resolve("shared");
        ServeProcess first = serve("--data-dir", data.toString(), "--port", "0");
        first.awaitPort();

        ServeProcess second = serve("--data-dir", data.toString(), "--port", "0");
        assertTrue(second.awaitExit(), "the second serve kept running: " + second.output());
        assertEquals(1, second.process.exitValue(), second.output());
        assertEquals("error: embedded: the data directory " + data.toRealPath() + " is in use by pgdurable serve "
                        + "(pid " + first.process.pid() + "); stop it first, or pass another --data-dir, --ephemeral "
                        + "or --db", second.stderr().strip(), "exactly one line on stderr");

        PgDurableCliTest.Result status = PgDurableCliTest.cli("status", "--data-dir", data.toString());
        assertEquals(0, status.code(), status.all());
        assertTrue(status.out().contains("server run by pgdurable serve (pid " + first.process.pid() + ")"),
                status.out());
        assertTrue(status.out().contains("schema:       pgdurable: up to date"), status.out());
        assertTrue(status.out().contains("long polling: activated"), status.out());
        Matcher url = Pattern.compile("using the embedded database at (jdbc:\\S+)").matcher(status.out());
        assertTrue(url.find(), status.out());
        // status left serve's server running, and that server keeps data as PostgreSQL does by default.
        try (Connection c = DriverManager.getConnection(url.group(1)); Statement st = c.createStatement()) {
            for (String setting : List.of("fsync", "synchronous_commit", "full_page_writes")) {
                try (ResultSet rs = st.executeQuery("SHOW " + setting)) {
                    assertTrue(rs.next());
                    assertEquals("on", rs.getString(1), setting);
                }
            }
        }
        assertTrue(first.process.isAlive(), first.output());
    }

    @Test
    void a_server_left_running_by_a_killed_serve_is_stopped_and_replaced() throws Exception {
        Path data = dir.resolve("killed");
        ServeProcess first = serve("--data-dir", data.toString(), "--port", "0");
        first.awaitPort();
        first.process.destroyForcibly(); // SIGKILL: no shutdown hook runs
        assertTrue(first.awaitExit(), first.output());
        Optional<ProcessHandle> orphan = postgresOf(data);
        assertTrue(orphan.isPresent(), "expected the killed serve's PostgreSQL to outlive it");

        ServeProcess second = serve("--data-dir", data.toString(), "--port", "0");
        second.awaitPort();
        assertTrue(second.stdout().contains("stopping the embedded PostgreSQL (pid " + orphan.get().pid()
                + ") left running by a pgdurable process that ended without stopping it"), second.output());
        assertFalse(running(orphan.get()), "the left-over server still runs");
        Optional<ProcessHandle> replacement = postgresOf(data);
        assertTrue(replacement.isPresent() && replacement.get().pid() != orphan.get().pid(), second.output());

        second.sigterm();
        assertTrue(second.awaitExit(), second.output());
        assertTrue(eventually(STOP, () -> !running(replacement.get())), "serve's SIGTERM left its PostgreSQL "
                + "running");
        assertTrue(second.stdout().contains("Durable Task sidecar stopped"), second.output());
    }

    // ------------------------------------------------------------------------------------------------- helpers

    private ServeProcess serve(String... args) throws IOException {
        ServeProcess p = ServeProcess.start(args);
        started.add(p);
        return p;
    }

    /** The postgres process named by the data directory's postmaster.pid, while it runs. */
    private static Optional<ProcessHandle> postgresOf(Path data) throws IOException {
        Path pidFile = data.resolve("pgdata/postmaster.pid");
        if (!Files.exists(pidFile)) {
            return Optional.empty();
        }
        List<String> lines = Files.readAllLines(pidFile);
        if (lines.isEmpty()) {
            return Optional.empty();
        }
        return ProcessHandle.of(Long.parseLong(lines.get(0).trim())).filter(EmbeddedServeRestartTest::running)
                .filter(h -> h.info().command().map(c -> c.endsWith("/postgres")).orElse(false));
    }

    /** Alive and not a zombie: an exited orphan may stay a zombie where nothing reaps the children of init. */
    private static boolean running(ProcessHandle h) {
        if (!h.isAlive()) {
            return false;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(h.pid()), "stat"));
            return stat.charAt(stat.lastIndexOf(')') + 2) != 'Z';
        } catch (IOException e) {
            return false; // gone meanwhile
        }
    }

    private static boolean eventually(Duration timeout, java.util.function.BooleanSupplier condition)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    /** {@code java -cp <this test's classpath> io.pgdurable.cli.PgDurableCli serve ...}, output captured. */
    private static final class ServeProcess {
        final Process process;
        private final StringBuffer out = new StringBuffer();
        private final StringBuffer err = new StringBuffer();
        private final CompletableFuture<Integer> port = new CompletableFuture<>();
        private final Thread outPump;
        private final Thread errPump;

        private ServeProcess(Process process) {
            this.process = process;
            outPump = pump(process.getInputStream(), out, true);
            errPump = pump(process.getErrorStream(), err, false);
        }

        /**
         * SIGTERM, as a user's kill or a service manager sends it. Not Process.destroy(), which also closes this
         * side's pipes, so that everything serve writes while it stops would be lost.
         */
        void sigterm() {
            process.toHandle().destroy();
        }

        /** Waits for the process to end and for everything it wrote to be read. */
        boolean awaitExit() throws InterruptedException {
            if (!process.waitFor(STOP.toSeconds(), TimeUnit.SECONDS)) {
                return false;
            }
            outPump.join(TimeUnit.SECONDS.toMillis(10));
            errPump.join(TimeUnit.SECONDS.toMillis(10));
            return !outPump.isAlive() && !errPump.isAlive();
        }

        static ServeProcess start(String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath(), PgDurableCli.class.getName(), "serve"));
            command.addAll(List.of(args));
            return new ServeProcess(new ProcessBuilder(command).start());
        }

        /** Surefire runs the tests from a manifest-only jar; it names the real classpath in this property. */
        private static String classpath() {
            String cp = System.getProperty("surefire.test.class.path");
            return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
        }

        private Thread pump(InputStream stream, StringBuffer sink, boolean stdout) {
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        sink.append(line).append('\n');
                        Matcher m = LISTENING.matcher(line);
                        if (stdout && m.find()) {
                            port.complete(Integer.parseInt(m.group(1)));
                        }
                    }
                } catch (IOException e) {
                    // the process ended
                } finally {
                    if (stdout) {
                        port.completeExceptionally(new IllegalStateException("serve ended before listening"));
                    }
                }
            }, "serve-output-" + process.pid() + (stdout ? "-out" : "-err"));
            t.setDaemon(true);
            t.start();
            return t;
        }

        int awaitPort() throws InterruptedException {
            try {
                return port.get(START.toSeconds(), TimeUnit.SECONDS);
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                throw new AssertionError("serve did not report its port: " + output(), e);
            }
        }

        String stdout() {
            return out.toString();
        }

        String stderr() {
            return err.toString();
        }

        String output() {
            return "pid " + process.pid() + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    /** A real Durable Task worker with the test's orchestration, on its own channel and thread. */
    private final class Worker implements AutoCloseable {
        private final ManagedChannel channel;
        private final Thread thread;

        Worker(int port) {
            channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            DurableTaskGrpcWorker worker = new DurableTaskGrpcWorkerBuilder().grpcChannel(channel)
                    .addOrchestration(new TaskOrchestrationFactory() {
                        @Override
                        public String getName() {
                            return "Resumable";
                        }

                        @Override
                        public TaskOrchestration create() {
                            return ctx -> {
                                String first = ctx.callActivity("Mark", "before", String.class).await();
                                ctx.setCustomStatus("waiting");
                                String go = ctx.waitForExternalEvent("go", String.class).await();
                                String second = ctx.callActivity("Mark", go, String.class).await();
                                ctx.complete(first + "," + second);
                            };
                        }
                    })
                    .addActivity(new TaskActivityFactory() {
                        @Override
                        public String getName() {
                            return "Mark";
                        }

                        @Override
                        public TaskActivity create() {
                            return ctx -> {
                                String input = ctx.getInput(String.class);
                                activityRuns.merge(input, 1, Integer::sum);
                                return input + "!";
                            };
                        }
                    })
                    .build();
            thread = new Thread(worker::startAndBlock, "restart-test-worker-" + port);
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void close() {
            channel.shutdownNow();
            thread.interrupt(); // ends the worker's reconnect pause
            awaitTermination(channel);
        }
    }

    private static final class Client implements AutoCloseable {
        private final ManagedChannel channel;
        final DurableTaskClient dt;

        Client(int port) {
            channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            dt = new DurableTaskGrpcClientBuilder().grpcChannel(channel).build();
        }

        @Override
        public void close() {
            channel.shutdownNow();
            awaitTermination(channel);
        }
    }

    private static void awaitTermination(ManagedChannel channel) {
        try {
            channel.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
