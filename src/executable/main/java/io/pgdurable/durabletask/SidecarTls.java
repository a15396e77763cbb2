package io.pgdurable.durabletask;

import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * The sidecar's TLS material: its certificate chain and private key, and optionally the CA whose certificates
 * clients must present (mutual TLS). Everything is read and checked here, with the JDK, when the sidecar is
 * configured, so a wrong file is reported by name before anything listens instead of as a failed handshake later.
 */
public final class SidecarTls {
    private static final Pattern PEM_BLOCK =
            Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \\1-----", Pattern.DOTALL);
    private static final String TO_PKCS8 = "convert it with 'openssl pkcs8 -topk8 -nocrypt -in KEY -out key.pem'";
    // One throw-away password for the in-memory key store gRPC's key manager reads; it never leaves the process.
    private static final char[] IN_MEMORY = "pgdurable".toCharArray();

    private final List<X509Certificate> certificateChain;
    private final PrivateKey privateKey;
    private final List<X509Certificate> clientCas;

    private SidecarTls(List<X509Certificate> certificateChain, PrivateKey privateKey,
                       List<X509Certificate> clientCas) {
        this.certificateChain = List.copyOf(certificateChain);
        this.privateKey = privateKey;
        this.clientCas = List.copyOf(clientCas);
    }

    /**
     * TLS from PEM files: {@code certificateChain} (the sidecar's certificate first, then any intermediates),
     * {@code privateKey} (unencrypted PKCS#8, {@code BEGIN PRIVATE KEY}) and {@code clientCa} (CA certificates
     * client certificates must chain to; null = clients need no certificate).
     *
     * @throws IllegalArgumentException naming the file and what is wrong with it
     */
    public static SidecarTls fromPemFiles(Path certificateChain, Path privateKey, Path clientCa) {
        return of(readCertificates(certificateChain), readPrivateKey(privateKey),
                clientCa == null ? List.of() : readCertificates(clientCa));
    }

    /**
     * TLS from parsed material; {@code clientCas} empty = clients need no certificate.
     *
     * @throws IllegalArgumentException when the chain is empty or the key is not the first certificate's
     */
    public static SidecarTls of(List<X509Certificate> certificateChain, PrivateKey privateKey,
                                List<X509Certificate> clientCas) {
        Objects.requireNonNull(certificateChain, "certificateChain");
        Objects.requireNonNull(privateKey, "privateKey");
        Objects.requireNonNull(clientCas, "clientCas");
        if (certificateChain.isEmpty()) {
            throw new IllegalArgumentException("the certificate chain is empty");
        }
        if (!signsFor(privateKey, certificateChain.get(0))) {
            throw new IllegalArgumentException("the private key does not belong to the certificate "
                    + certificateChain.get(0).getSubjectX500Principal().getName()
                    + " (the first one of the chain must be the sidecar's own)");
        }
        return new SidecarTls(certificateChain, privateKey, clientCas);
    }

    /** The X.509 certificates of a PEM file, in file order; other blocks (a key, say) are ignored. */
    public static List<X509Certificate> readCertificates(Path file) {
        List<X509Certificate> certificates = new ArrayList<>();
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            for (Block b : blocks(file)) {
                if (b.type().equals("CERTIFICATE")) {
                    certificates.add((X509Certificate) factory.generateCertificate(
                            new ByteArrayInputStream(b.der(file))));
                }
            }
        } catch (CertificateException e) {
            throw new IllegalArgumentException(file + " holds a certificate that cannot be read: " + e.getMessage(),
                    e);
        }
        if (certificates.isEmpty()) {
            throw new IllegalArgumentException(file + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        return certificates;
    }

    /** The unencrypted PKCS#8 private key of a PEM file (RSA, EC or EdDSA); other blocks are ignored. */
    public static PrivateKey readPrivateKey(Path file) {
        for (Block b : blocks(file)) {
            switch (b.type()) {
                case "PRIVATE KEY":
                    return pkcs8(file, b.der(file));
                case "ENCRYPTED PRIVATE KEY":
                    throw new IllegalArgumentException(file + " holds an encrypted private key, which the sidecar "
                            + "cannot unlock; " + TO_PKCS8);
                case "RSA PRIVATE KEY":
                case "EC PRIVATE KEY":
                    throw new IllegalArgumentException(file + " holds a " + b.type().split(" ")[0] + " key in its "
                            + "traditional format, not PKCS#8; " + TO_PKCS8);
                default:
                    // a certificate next to the key: skip it
            }
        }
        throw new IllegalArgumentException(file + " holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
    }

    /** Whether clients must present a certificate signed by the client CA. */
    public boolean mutual() {
        return !clientCas.isEmpty();
    }

    /** The sidecar's own certificate (the first of the chain). */
    public X509Certificate certificate() {
        return certificateChain.get(0);
    }

    /**
     * Why clients will refuse the sidecar's certificate at {@code now} (expired, not yet valid), if they will. A
     * warning rather than an error: a clock that is off is worth hearing about, not worth refusing to start.
     */
    public Optional<String> validityProblem(Instant now) {
        X509Certificate own = certificate();
        String name = own.getSubjectX500Principal().getName();
        if (now.isAfter(own.getNotAfter().toInstant())) {
            return Optional.of("the sidecar's TLS certificate " + name + " expired at " + own.getNotAfter().toInstant()
                    + "; clients will refuse it");
        }
        if (now.isBefore(own.getNotBefore().toInstant())) {
            return Optional.of("the sidecar's TLS certificate " + name + " is valid only from "
                    + own.getNotBefore().toInstant() + "; clients will refuse it until then (is this clock right?)");
        }
        return Optional.empty();
    }

    /** gRPC's server credentials for this material; client certificates required when {@link #mutual()}. */
    ServerCredentials serverCredentials() {
        try {
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            keys.setKeyEntry("sidecar", privateKey, IN_MEMORY, certificateChain.toArray(new X509Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, IN_MEMORY);
            TlsServerCredentials.Builder creds = TlsServerCredentials.newBuilder().keyManager(kmf.getKeyManagers());
            if (mutual()) {
                KeyStore trusted = KeyStore.getInstance("PKCS12");
                trusted.load(null, null);
                for (int i = 0; i < clientCas.size(); i++) {
                    trusted.setCertificateEntry("client-ca-" + i, clientCas.get(i));
                }
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(trusted);
                creds.trustManager(tmf.getTrustManagers()).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
            }
            return creds.build();
        } catch (GeneralSecurityException | IOException e) {
            // The material was checked when this object was made; the JDK's key stores failing is not bad input.
            throw new IllegalStateException("could not set up the sidecar's TLS: " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "TLS as " + certificate().getSubjectX500Principal().getName() + (mutual()
                ? ", client certificates required (signed by "
                + clientCas.get(0).getSubjectX500Principal().getName() + (clientCas.size() > 1 ? " or others" : "")
                + ")" : ", no client certificates");
    }

    private record Block(String type, String base64) {
        byte[] der(Path file) {
            try {
                return Base64.getMimeDecoder().decode(base64);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(file + " has a " + type + " block that is not base64", e);
            }
        }
    }

    private static List<Block> blocks(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.ISO_8859_1); // PEM is ASCII; never fail on stray bytes
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("cannot read " + file + ": no such file", e);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + file + ": "
                    + (Files.isDirectory(file) ? "it is a directory" : e.getMessage()), e);
        }
        List<Block> blocks = new ArrayList<>();
        Matcher m = PEM_BLOCK.matcher(text);
        while (m.find()) {
            blocks.add(new Block(m.group(1), m.group(2)));
        }
        return blocks;
    }

    private static PrivateKey pkcs8(Path file, byte[] der) {
        // PKCS#8 names its algorithm inside; trying the usual ones is simpler than reading the ASN.1 here.
        for (String algorithm : List.of("RSA", "EC", "Ed25519", "Ed448")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException | IllegalArgumentException notThisOne) {
                // next algorithm
            }
        }
        throw new IllegalArgumentException(file + " holds a private key of a kind the JDK cannot read (RSA, EC and "
                + "EdDSA keys in PKCS#8 are supported)");
    }

    /** Signs a few random bytes with the key and verifies them with the certificate's public key. */
    private static boolean signsFor(PrivateKey key, X509Certificate certificate) {
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            default -> "EdDSA"; // Ed25519 and Ed448: the only other kinds pkcs8() returns
        };
        byte[] probe = new byte[32];
        new SecureRandom().nextBytes(probe);
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            return false; // e.g. an RSA key against an EC certificate
        }
    }
}
