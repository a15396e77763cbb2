package io.pgdurable.durabletask;

import static io.pgdurable.durabletask.SidecarHarness.activity;
import static io.pgdurable.durabletask.SidecarHarness.orchestration;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sidecar over TLS with the real Durable Task client and worker: an orchestration runs, and clients that do
 * not speak TLS with the sidecar's CA get nothing. Also how the TLS files are checked, and when the sidecar warns
 * about plaintext. (Mutual TLS through {@code serve} is ServeTlsTest.)
 */
class SidecarTlsTest {
    @TempDir
    static Path dir;
    static TestCertificates certs;
    static String schema;
    static PostgresProvider provider;
    static SidecarServer sidecar;

    private final List<ManagedChannel> channels = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        certs = TestCertificates.create(dir);
        schema = TestDatabase.newSchemaName("dt_tls");
        provider = PostgresProvider.create(TestDatabase.config(schema).poolSize(6).longPolling(true).build());
        sidecar = SidecarServer.start(provider, SidecarConfig.defaults(schema).withPort(0)
                .withShutdownGrace(Duration.ofSeconds(1))
                .withTls(SidecarTls.fromPemFiles(certs.serverChain, certs.serverKey, null)));
    }

    @AfterAll
    static void stop() {
        if (sidecar != null) {
            sidecar.close();
        }
        if (provider != null) {
            provider.close();
        }
        TestDatabase.dropSchema(schema);
    }

    @AfterEach
    void closeChannels() throws InterruptedException {
        for (ManagedChannel c : channels) {
            c.shutdownNow();
            c.awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private ManagedChannel track(ManagedChannel c) {
        channels.add(c);
        return c;
    }

    @Test
    void an_orchestration_runs_over_tls() throws Exception {
        DurableTaskGrpcWorker worker = new DurableTaskGrpcWorkerBuilder()
                .grpcChannel(track(certs.channel(sidecar.port(), null, null)))
                .addOrchestration(orchestration("Shout", ctx -> ctx.complete(
                        ctx.callActivity("Upper", ctx.getInput(String.class), String.class).await() + "!")))
                .addActivity(activity("Upper", ctx -> ctx.getInput(String.class).toUpperCase()))
                .build();
        Thread workerThread = new Thread(worker::startAndBlock, "tls-worker");
        workerThread.setDaemon(true);
        workerThread.start();
        try {
            DurableTaskClient client = new DurableTaskGrpcClientBuilder()
                    .grpcChannel(track(certs.channel(sidecar.port(), null, null))).build();
            String id = client.scheduleNewOrchestrationInstance("Shout", "over tls");
            OrchestrationMetadata done = client.waitForInstanceCompletion(id, Duration.ofSeconds(30), true);
            assertEquals(OrchestrationRuntimeStatus.COMPLETED, done.getRuntimeStatus());
            assertEquals("OVER TLS!", done.readOutputAs(String.class));
        } finally {
            workerThread.interrupt();
        }
    }

    @Test
    void a_plaintext_client_and_one_not_trusting_the_ca_get_nothing() throws Exception {
        ManagedChannel plaintext = track(Grpc.newChannelBuilderForAddress("127.0.0.1", sidecar.port(),
                InsecureChannelCredentials.create()).build());
        refused(new DurableTaskGrpcClientBuilder().grpcChannel(plaintext).build(), "plaintext");

        // The JDK's default trust store: the test CA is not in it, so the sidecar's certificate is not believed.
        ManagedChannel defaultTrust = track(Grpc.newChannelBuilderForAddress("127.0.0.1", sidecar.port(),
                TlsChannelCredentials.create()).build());
        StatusRuntimeException e = refused(new DurableTaskGrpcClientBuilder().grpcChannel(defaultTrust).build(),
                "default trust");
        assertTrue(String.valueOf(causes(e)).contains("PKIX") || String.valueOf(causes(e)).contains("certificate"),
                "a certificate failure, was " + causes(e));
    }

    /** A client call that must fail before reaching the sidecar's service; nothing is created. */
    static StatusRuntimeException refused(DurableTaskClient client, String what) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                () -> client.scheduleNewOrchestrationInstance("Shout", "x"), what + " client got through");
        assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), what + ": " + e);
        return e;
    }

    private static List<String> causes(Throwable t) {
        List<String> all = new ArrayList<>();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.add(c.toString());
        }
        return all;
    }

    @Test
    void the_files_are_checked_and_what_is_wrong_is_named() throws Exception {
        SidecarTls tls = SidecarTls.fromPemFiles(certs.serverChain, certs.serverKey, certs.caCert);
        assertTrue(tls.mutual());
        assertEquals("CN=localhost", tls.certificate().getSubjectX500Principal().getName());
        assertFalse(SidecarTls.fromPemFiles(certs.serverChain, certs.serverKey, null).mutual());

        java.security.cert.X509Certificate own = tls.certificate();
        Instant notAfter = own.getNotAfter().toInstant();
        Instant notBefore = own.getNotBefore().toInstant();
        assertEquals(Optional.empty(), tls.validityProblem(notAfter));
        assertEquals(Optional.empty(), tls.validityProblem(notBefore));
        assertEquals(Optional.of("the sidecar's TLS certificate CN=localhost expired at " + notAfter + "; clients "
                + "will refuse it"), tls.validityProblem(notAfter.plusSeconds(1)));
        assertTrue(tls.validityProblem(notBefore.minusSeconds(1)).orElseThrow().contains("valid only from "
                + notBefore), "not yet valid");

        IllegalArgumentException wrongKey = assertThrows(IllegalArgumentException.class,
                () -> SidecarTls.fromPemFiles(certs.serverChain, certs.clientKey, null));
        assertTrue(wrongKey.getMessage().startsWith("the private key does not belong to the certificate "
                + "CN=localhost"), wrongKey.getMessage());

        IllegalArgumentException certAsKey = assertThrows(IllegalArgumentException.class,
                () -> SidecarTls.readPrivateKey(certs.caCert));
        assertEquals(certs.caCert + " holds no PEM private key (-----BEGIN PRIVATE KEY-----)", certAsKey.getMessage());

        IllegalArgumentException keyAsCert = assertThrows(IllegalArgumentException.class,
                () -> SidecarTls.readCertificates(certs.serverKey));
        assertEquals(certs.serverKey + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                keyAsCert.getMessage());

        Path pkcs1 = Files.writeString(dir.resolve("pkcs1.pem"),
                "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        IllegalArgumentException traditional = assertThrows(IllegalArgumentException.class,
                () -> SidecarTls.readPrivateKey(pkcs1));
        assertTrue(traditional.getMessage().contains("not PKCS#8")
                && traditional.getMessage().contains("openssl pkcs8 -topk8 -nocrypt"), traditional.getMessage());

        Path missing = dir.resolve("missing.pem");
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> SidecarTls.readCertificates(missing));
        assertEquals("cannot read " + missing + ": no such file", none.getMessage());

        // A combined file (certificate and key in one, as some tools write them) serves as both.
        Path combined = Files.writeString(dir.resolve("combined.pem"),
                Files.readString(certs.serverKey) + Files.readString(certs.serverChain));
        assertEquals(2, SidecarTls.readCertificates(combined).size());
        assertEquals("CN=localhost", SidecarTls.fromPemFiles(combined, combined, null).certificate()
                .getSubjectX500Principal().getName());
    }

    @Test
    void plaintext_beyond_loopback_is_warned_about() {
        SidecarConfig plain = SidecarConfig.defaults("hub");
        for (String loopback : List.of("127.0.0.1", "127.0.0.2", "localhost", "::1")) {
            assertEquals(Optional.empty(), SidecarServer.plaintextExposure(plain.withHost(loopback)),
                    loopback);
        }
        for (String exposed : List.of("0.0.0.0", "::", "10.1.2.3", "192.168.0.7")) {
            String warning = SidecarServer.plaintextExposure(plain.withHost(exposed)).orElseThrow(
                    () -> new AssertionError("no warning for " + exposed));
            assertTrue(warning.contains(exposed) && warning.contains("without TLS")
                    && warning.contains("--tls-cert"), warning);
            assertEquals(1, warning.lines().count(), warning);
            assertEquals(Optional.empty(), SidecarServer.plaintextExposure(plain.withHost(exposed)
                    .withTls(SidecarTls.fromPemFiles(certs.serverChain, certs.serverKey, null))),
                    "with TLS, " + exposed);
        }
    }
}
