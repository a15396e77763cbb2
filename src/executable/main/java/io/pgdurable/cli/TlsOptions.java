package io.pgdurable.cli;

import io.pgdurable.durabletask.SidecarTls;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.function.Supplier;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** {@code serve}'s TLS options: the sidecar's certificate and key, and the CA client certificates must chain to. */
final class TlsOptions {
    @Option(names = "--tls-cert", paramLabel = "FILE",
            description = "Serve TLS with this PEM certificate chain (the sidecar's certificate first); needs "
                    + "--tls-key.")
    Path cert;

    @Option(names = "--tls-key", paramLabel = "FILE",
            description = "The private key of --tls-cert: unencrypted PKCS#8 PEM (-----BEGIN PRIVATE KEY-----).")
    Path key;

    @Option(names = "--tls-client-ca", paramLabel = "FILE",
            description = "Mutual TLS: clients must present a certificate signed by a CA of this PEM file; needs "
                    + "--tls-cert and --tls-key.")
    Path clientCa;

    /**
     * The TLS material, read and checked, or null for plaintext; anything wrong is a usage error (exit code 2)
     * naming the option, raised before a database or a port is touched.
     */
    SidecarTls load(CommandSpec spec) {
        if (cert == null) {
            if (clientCa != null) {
                throw usage(spec, "--tls-client-ca needs --tls-cert and --tls-key: clients can only be asked for a "
                        + "certificate over TLS");
            }
            if (key != null) {
                throw usage(spec, "--tls-key needs --tls-cert, the certificate the key belongs to");
            }
            return null;
        }
        if (key == null) {
            throw usage(spec, "--tls-cert needs --tls-key, the certificate's private key");
        }
        List<X509Certificate> chain = read(spec, "--tls-cert", () -> SidecarTls.readCertificates(cert));
        PrivateKey privateKey = read(spec, "--tls-key", () -> SidecarTls.readPrivateKey(key));
        List<X509Certificate> cas = clientCa == null ? List.of()
                : read(spec, "--tls-client-ca", () -> SidecarTls.readCertificates(clientCa));
        return read(spec, "--tls-key", () -> SidecarTls.of(chain, privateKey, cas));
    }

    private static <T> T read(CommandSpec spec, String option, Supplier<T> reader) {
        try {
            return reader.get();
        } catch (IllegalArgumentException e) {
            throw usage(spec, option + ": " + e.getMessage());
        }
    }

    private static ParameterException usage(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
