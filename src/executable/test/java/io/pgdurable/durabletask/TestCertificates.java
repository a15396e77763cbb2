package io.pgdurable.durabletask;

import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Certificates for the TLS tests, made with the JDK's keytool only (a CI machine may lack openssl): a CA, a sidecar
 * certificate for 127.0.0.1/localhost signed by it, a client certificate signed by it, and a self-signed client
 * certificate no CA vouches for. Every file is PEM; keys are unencrypted PKCS#8.
 */
public final class TestCertificates {
    private static final String PASSWORD = "changeit";

    /** The CA's certificate (what clients trust, and the sidecar's --tls-client-ca). */
    public final Path caCert;
    /** The sidecar's chain (its certificate, then the CA's) and key. */
    public final Path serverChain;
    public final Path serverKey;
    /** A client certificate signed by the CA, and its key. */
    public final Path clientCert;
    public final Path clientKey;
    /** A self-signed client certificate, and its key. */
    public final Path strangerCert;
    public final Path strangerKey;

    private final Path dir;

    private TestCertificates(Path dir) {
        this.dir = dir;
        caCert = dir.resolve("ca.pem");
        serverChain = dir.resolve("server-chain.pem");
        serverKey = dir.resolve("server-key.pem");
        clientCert = dir.resolve("client.pem");
        clientKey = dir.resolve("client-key.pem");
        strangerCert = dir.resolve("stranger.pem");
        strangerKey = dir.resolve("stranger-key.pem");
    }

    /** Makes all of them in {@code dir}; a few seconds of keytool runs. */
    public static TestCertificates create(Path dir) throws IOException, InterruptedException,
            GeneralSecurityException {
        TestCertificates c = new TestCertificates(dir);
        c.make();
        return c;
    }

    /**
     * A channel to a TLS sidecar on 127.0.0.1:{@code port} that trusts the test CA and presents {@code cert}/
     * {@code key} when both are given (no client certificate when null).
     */
    public ManagedChannel channel(int port, Path cert, Path key) throws IOException {
        TlsChannelCredentials.Builder creds = TlsChannelCredentials.newBuilder().trustManager(caCert.toFile());
        if (cert != null) {
            creds.keyManager(cert.toFile(), key.toFile());
        }
        return Grpc.newChannelBuilderForAddress("127.0.0.1", port, creds.build()).build();
    }

    private void make() throws IOException, InterruptedException, GeneralSecurityException {
        keyPair("ca", "CN=pgdurable test CA", "-ext", "bc:c");
        keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", store("ca"), "-file", caCert.toString());

        keyPair("server", "CN=localhost");
        Path serverCert = signed("server", "san=ip:127.0.0.1,dns:localhost", "eku=serverAuth");
        Files.writeString(serverChain, Files.readString(serverCert) + Files.readString(caCert));
        writeKey("server", serverKey);

        keyPair("client", "CN=pgdurable test worker");
        Files.copy(signed("client", null, "eku=clientAuth"), clientCert);
        writeKey("client", clientKey);

        keyPair("stranger", "CN=pgdurable stranger");
        keytool("-exportcert", "-rfc", "-alias", "stranger", "-keystore", store("stranger"), "-file",
                strangerCert.toString());
        writeKey("stranger", strangerKey);
    }

    private void keyPair(String alias, String dname, String... extra) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(List.of("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname",
                "secp256r1", "-dname", dname, "-validity", "2", "-storetype", "PKCS12", "-keystore", store(alias)));
        args.addAll(List.of(extra));
        keytool(args.toArray(new String[0]));
    }

    /** A certificate for {@code alias}'s key, issued by the CA, as PEM. */
    private Path signed(String alias, String san, String eku) throws IOException, InterruptedException {
        Path csr = dir.resolve(alias + ".csr");
        Path cert = dir.resolve(alias + "-only.pem");
        keytool("-certreq", "-alias", alias, "-keystore", store(alias), "-file", csr.toString());
        List<String> args = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", "ca", "-keystore", store("ca"),
                "-infile", csr.toString(), "-outfile", cert.toString(), "-validity", "2", "-ext", eku));
        if (san != null) {
            args.addAll(List.of("-ext", san));
        }
        keytool(args.toArray(new String[0]));
        return cert;
    }

    /** The key out of the PKCS12 store, as PKCS#8 PEM: what {@code PrivateKey.getEncoded()} is for such keys. */
    private void writeKey(String alias, Path target) throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(Path.of(store(alias)))) {
            store.load(in, PASSWORD.toCharArray());
        }
        PrivateKey key = (PrivateKey) store.getKey(alias, PASSWORD.toCharArray());
        String base64 = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(key.getEncoded());
        Files.writeString(target, "-----BEGIN PRIVATE KEY-----\n" + base64 + "\n-----END PRIVATE KEY-----\n");
    }

    private String store(String alias) {
        return dir.resolve(alias + ".p12").toString();
    }

    private void keytool(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        command.addAll(List.of("-storepass", PASSWORD, "-noprompt"));
        Path log = dir.resolve("keytool.log");
        Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("keytool " + args[0] + " did not finish in 60 s");
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("keytool " + String.join(" ", args) + " failed (" + p.exitValue()
                    + "): " + Files.readString(log));
        }
    }
}
