package io.pgdurable.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.NewOrchestrationInstanceOptions;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationFactory;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.pgdurable.cli.PgDurableCliTest.Result;
import io.pgdurable.durabletask.TestCertificates;
import io.pgdurable.postgres.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code serve --tls-cert --tls-key --tls-client-ca}: the real Durable Task worker and client with a certificate the
 * CA signed run an orchestration; a client without a certificate, or with one the CA did not sign, is refused and
 * creates nothing. TLS options that cannot work are usage errors naming the option.
 */
class ServeTlsTest {
    @TempDir
    static Path dir;
    static TestCertificates certs;

    @BeforeAll
    static void makeCertificates() throws Exception {
        certs = TestCertificates.create(dir);
    }

    @Test
    void under_mutual_tls_only_clients_with_a_certificate_of_the_ca_get_in() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_mtls");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        Thread serve = new Thread(() -> exit.complete(PgDurableCli.run(new PrintWriter(out, true),
                new PrintWriter(err, true), "serve", "--db", TestDatabase.url(), "--schema", schema, "--port", "0",
                "--tls-cert", certs.serverChain.toString(), "--tls-key", certs.serverKey.toString(),
                "--tls-client-ca", certs.caCert.toString())), "serve-mtls-under-test");
        serve.start();
        List<ManagedChannel> channels = new ArrayList<>();
        Thread workerThread = null;
        try {
            Pattern listening = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Matcher m;
            while (!(m = listening.matcher(out.toString())).find() && !exit.isDone()
                    && System.nanoTime() < deadline) {
                Thread.sleep(25);
            }
            assertTrue(m.find(0), "serve did not report its port; out=" + out + " err=" + err);
            int port = Integer.parseInt(m.group(1));
            assertTrue(out.toString().contains("Serving TLS as CN=localhost, client certificates required (signed "
                    + "by CN=pgdurable test CA)"), out.toString());

            ManagedChannel workerChannel = certs.channel(port, certs.clientCert, certs.clientKey);
            channels.add(workerChannel);
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
            workerThread = new Thread(worker::startAndBlock, "serve-mtls-worker");
            workerThread.setDaemon(true);
            workerThread.start();

            ManagedChannel clientChannel = certs.channel(port, certs.clientCert, certs.clientKey);
            channels.add(clientChannel);
            DurableTaskClient client = new DurableTaskGrpcClientBuilder().grpcChannel(clientChannel).build();
            String id = client.scheduleNewOrchestrationInstance("Double", 21);
            OrchestrationMetadata done = client.waitForInstanceCompletion(id, Duration.ofSeconds(30), true);
            assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
            assertEquals(42, done.readOutputAs(Integer.class));

            ManagedChannel noCertificate = certs.channel(port, null, null);
            ManagedChannel stranger = certs.channel(port, certs.strangerCert, certs.strangerKey);
            channels.add(noCertificate);
            channels.add(stranger);
            refused(noCertificate, "no-certificate", client);
            refused(stranger, "stranger", client);
        } finally {
            for (ManagedChannel c : channels) {
                c.shutdownNow();
            }
            if (workerThread != null) {
                workerThread.interrupt();
            }
            serve.interrupt();
            Integer code = exit.get(30, TimeUnit.SECONDS);
            assertEquals(0, code, "err=" + err);
            assertTrue(out.toString().contains("Durable Task sidecar stopped"), out.toString());
            TestDatabase.dropSchema(schema);
        }
    }

    /** {@code channel}'s client fails to start an instance, and the admitted {@code witness} finds none. */
    private static void refused(ManagedChannel channel, String instanceId, DurableTaskClient witness) {
        DurableTaskClient client = new DurableTaskGrpcClientBuilder().grpcChannel(channel).build();
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                () -> client.scheduleNewOrchestrationInstance("Double",
                        new NewOrchestrationInstanceOptions().setInstanceId(instanceId).setInput(1)),
                instanceId + " client got through");
        assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), instanceId + ": " + e);
        assertFalse(witness.getInstanceMetadata(instanceId, false).isInstanceFound(),
                instanceId + " client created an instance");
    }

    @Test
    void tls_options_that_cannot_work_are_usage_errors_naming_the_option() throws Exception {
        String cert = certs.serverChain.toString();
        String key = certs.serverKey.toString();
        String ca = certs.caCert.toString();
        Path missing = dir.resolve("no-such.pem");

        usageError("--tls-key needs --tls-cert, the certificate the key belongs to", "--tls-key", key);
        usageError("--tls-cert needs --tls-key, the certificate's private key", "--tls-cert", cert);
        usageError("--tls-client-ca needs --tls-cert and --tls-key: clients can only be asked for a certificate "
                + "over TLS", "--tls-client-ca", ca);
        usageError("--tls-client-ca needs --tls-cert and --tls-key: clients can only be asked for a certificate "
                + "over TLS", "--tls-client-ca", ca, "--tls-key", key);
        usageError("--tls-cert: cannot read " + missing + ": no such file", "--tls-cert", missing.toString(),
                "--tls-key", key);
        usageError("--tls-key: cannot read " + dir + ": it is a directory", "--tls-cert", cert, "--tls-key",
                dir.toString());
        usageError("--tls-client-ca: cannot read " + missing + ": no such file", "--tls-cert", cert, "--tls-key",
                key, "--tls-client-ca", missing.toString());
        usageError("--tls-key: " + ca + " holds no PEM private key (-----BEGIN PRIVATE KEY-----)", "--tls-cert",
                cert, "--tls-key", ca);
        usageError("--tls-cert: " + key + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)", "--tls-cert",
                key, "--tls-key", key);
        usageError("--tls-client-ca: " + key + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", key);
        usageError("--tls-key: the private key does not belong to the certificate CN=localhost (the first one of "
                + "the chain must be the sidecar's own)", "--tls-cert", cert, "--tls-key",
                certs.clientKey.toString());
        Path encrypted = Files.writeString(dir.resolve("encrypted.pem"),
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n");
        usageError("--tls-key: " + encrypted + " holds an encrypted private key, which the sidecar cannot unlock; "
                + "convert it with 'openssl pkcs8 -topk8 -nocrypt -in KEY -out key.pem'", "--tls-cert", cert,
                "--tls-key", encrypted.toString());
    }

    /** serve with {@code tlsArgs} exits 2 with exactly {@code message} on one line, before touching a database. */
    private static void usageError(String message, String... tlsArgs) {
        List<String> args = new ArrayList<>(List.of("serve", "--db",
                "jdbc:postgresql://127.0.0.1:1/never_reached", "--port", "0"));
        args.addAll(List.of(tlsArgs));
        Result r = PgDurableCliTest.cli(args.toArray(new String[0]));
        assertEquals(2, r.code(), r.all());
        assertEquals("error: " + message + " (see 'pgdurable serve --help')", r.err().strip());
        assertEquals("", r.out(), "nothing started");
    }
}
