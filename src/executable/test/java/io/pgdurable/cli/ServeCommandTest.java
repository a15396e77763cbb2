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
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.postgres.pgbouncer.PgBouncer;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.io.StringWriter;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code pgdurable serve} runs a sidecar a real Durable Task worker and client use, and stops cleanly. */
class ServeCommandTest {

    @Test
    void serve_runs_an_orchestration_and_stops_when_interrupted() throws Exception {
        runsAnOrchestrationAndStops("--db", TestDatabase.url());
    }

    /** Behind PgBouncer in transaction mode: the pool through it, migrations and LISTENs direct. */
    @Test
    void serve_runs_through_pg_bouncer_with_a_direct_url() throws Exception {
        runsAnOrchestrationAndStops("--db", PgBouncer.url(), "--direct-db", TestDatabase.url());
    }

    /** --db through a transaction pooler without --direct-db: refused before the pool runs a statement. */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS) // a serve that is not refused runs until interrupted
    void serve_through_a_transaction_pooler_without_direct_db_is_refused_naming_the_option() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_serve_pooler");
        try {
            PgDurableCliTest.Result r = PgDurableCliTest.cli("serve", "--db", PgBouncer.url(), "--schema", schema,
                    "--port", "0");
            assertEquals(1, r.code(), r.all());
            assertTrue(r.err().startsWith("error: connect: jdbcUrl "), r.err());
            assertTrue(r.err().contains("goes through a transaction pooler"), r.err());
            assertTrue(r.err().contains("--direct-db URL"), r.err());
            assertFalse(r.out().contains("listening on"), r.out());
            boolean created = TestDatabase.withMaintenanceConnection(c -> {
                try (java.sql.PreparedStatement ps = c.prepareStatement(
                        "SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
                    ps.setString(1, schema);
                    try (java.sql.ResultSet rs = ps.executeQuery()) {
                        return rs.next();
                    }
                }
            });
            assertFalse(created, "the refused serve created its schema");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void a_taken_port_is_one_line_naming_the_address_and_the_option_that_moves_it() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_serve_busy");
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            PgDurableCliTest.Result r = PgDurableCliTest.cli("serve", "--db", TestDatabase.url(), "--schema", schema,
                    "--port", String.valueOf(taken.getLocalPort()));
            assertEquals(1, r.code(), r.all());
            assertEquals("error: the gRPC port 127.0.0.1:" + taken.getLocalPort() + " is in use (another process "
                    + "listens there): stop that process or choose another port with --port PORT (--port 0 picks "
                    + "a free one)", r.err().strip());
            assertFalse(r.out().contains("listening on"), r.out());
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    private static void runsAnOrchestrationAndStops(String... database) throws Exception {
        String schema = TestDatabase.newSchemaName("dt_serve");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        String[] args = java.util.stream.Stream.concat(java.util.stream.Stream.of("serve"),
                java.util.stream.Stream.concat(java.util.Arrays.stream(database),
                        java.util.stream.Stream.of("--schema", schema, "--port", "0"))).toArray(String[]::new);
        Thread serve = new Thread(() -> exit.complete(PgDurableCli.run(new PrintWriter(out, true),
                new PrintWriter(err, true), args)), "serve-under-test");
        serve.start();
        ManagedChannel workerChannel = null;
        ManagedChannel clientChannel = null;
        Thread workerThread = null;
        try {
            Pattern listening = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Matcher m = listening.matcher("");
            while (!(m = listening.matcher(out.toString())).find() && !exit.isDone()
                    && System.nanoTime() < deadline) {
                Thread.sleep(25);
            }
            assertTrue(m.find(0), "serve did not report its port; out=" + out + " err=" + err);
            int port = Integer.parseInt(m.group(1));

            workerChannel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            DurableTaskGrpcWorker worker = new DurableTaskGrpcWorkerBuilder().grpcChannel(workerChannel)
                    .addOrchestration(new TaskOrchestrationFactory() {
                        @Override
                        public String getName() {
                            return "Double";
                        }

                        @Override
                        public TaskOrchestration create() {
                            return ctx -> ctx.complete(ctx.callActivity("Twice", ctx.getInput(Integer.class),
                                    Integer.class).await());
                        }
                    })
                    .addActivity(new TaskActivityFactory() {
                        @Override
                        public String getName() {
                            return "Twice";
                        }

                        @Override
                        public TaskActivity create() {
                            return ctx -> 2 * ctx.getInput(Integer.class);
                        }
                    })
                    .build();
            workerThread = new Thread(worker::startAndBlock, "serve-test-worker");
            workerThread.setDaemon(true);
            workerThread.start();
            clientChannel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
            DurableTaskClient client = new DurableTaskGrpcClientBuilder().grpcChannel(clientChannel).build();
            String id = client.scheduleNewOrchestrationInstance("Double", 21);
            OrchestrationMetadata done = client.waitForInstanceCompletion(id, Duration.ofSeconds(30), true);
            assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
            assertEquals(42, done.readOutputAs(Integer.class));
        } finally {
            if (workerChannel != null) {
                workerChannel.shutdownNow();
            }
            if (workerThread != null) {
                workerThread.interrupt();
            }
            if (clientChannel != null) {
                clientChannel.shutdownNow();
            }
            serve.interrupt();
            Integer code = exit.get(30, TimeUnit.SECONDS);
            assertEquals(0, code, "err=" + err);
            assertTrue(out.toString().contains("Durable Task sidecar stopped"), out.toString());
            TestDatabase.dropSchema(schema);
        }
    }
}
