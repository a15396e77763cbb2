package io.pgdurable.bench;

import io.pgdurable.node.NodeRuntime;
import io.pgdurable.postgres.JdbcUrls;
import io.pgdurable.spi.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * graphile-worker in a Node child process ({@code peer.mjs}), driven one command at a time over stdin and stdout
 * (one JSON line each way), so the Java side decides the order of the arms and the timing windows while every
 * graphile figure is taken inside Node.
 *
 * <p>The package set lives in the jar ({@code io/pgdurable/bench/graphile/}: {@code package.json},
 * {@code package-lock.json} and the script) rather than in the source tree only, so {@code pgdurable.jar bench} runs
 * the peer from anywhere: it is copied into a directory of {@link NodeRuntime#cacheDir()} named by its content's
 * digest, where {@link NodeRuntime} runs {@code npm ci} once, with a node it found or provisioned.
 *
 * <p>Closing ends the child this instance started (asked to quit, then destroyed when it does not within 10 s), and
 * nothing else.
 */
final class GraphileWorkerPeer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GraphileWorkerPeer.class);
    private static final String RESOURCES = "/io/pgdurable/bench/graphile/";
    private static final List<String> FILES = List.of("package.json", "package-lock.json", "peer.mjs");
    private static final Duration START_TIMEOUT = Duration.ofMinutes(1);
    private static final Duration QUIT_TIMEOUT = Duration.ofSeconds(10);
    private static final Map<String, Object> END_OF_OUTPUT = Map.of();

    private final Process process;
    private final Writer commands;
    private final BlockingQueue<Map<String, Object>> replies = new LinkedBlockingQueue<>();
    private final Deque<String> stderrTail = new ArrayDeque<>();
    private final Thread stdoutReader;
    private final Thread stderrReader;
    private final String version;
    private final String nodeVersion;

    private GraphileWorkerPeer(Process process) {
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.stdoutReader = reader("graphile-peer-out", process.getInputStream(), this::reply);
        this.stderrReader = reader("graphile-peer-err", process.getErrorStream(), this::logLine);
        Map<String, Object> ready;
        try {
            ready = next(START_TIMEOUT, "start");
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        this.version = String.valueOf(ready.get("version"));
        this.nodeVersion = String.valueOf(ready.get("node"));
    }

    /**
     * Starts graphile-worker on {@code schema} (its tables and functions are created there on first use) of the
     * database {@code jdbcUrl} names. Fails when Node.js or the packages cannot be provisioned.
     */
    static GraphileWorkerPeer start(String jdbcUrl, String schema) throws IOException {
        Path dir = unpackPackage();
        NodeRuntime.Runtime node = NodeRuntime.forDirectory(dir);
        ProcessBuilder pb = new ProcessBuilder(node.node().toString(), "peer.mjs").directory(dir.toFile());
        // the password goes into the environment, which other users cannot read, rather than onto the command line
        pb.environment().put("PGDURABLE_PEER_CONNECTION", Json.write(connection(jdbcUrl)));
        pb.environment().put("PGDURABLE_PEER_SCHEMA", schema);
        // graphile-worker's documented switch that skips building a log line per completed job
        pb.environment().put("NO_LOG_SUCCESS", "1");
        log.info("starting graphile-worker with node {} in {}", node.version(), dir);
        return new GraphileWorkerPeer(pb.start());
    }

    /** graphile-worker's version, from its installed package.json. */
    String version() {
        return version;
    }

    String nodeVersion() {
        return nodeVersion;
    }

    /** Adds jobs {@code base} .. {@code base + items - 1} (untimed; one {@code addJobs} call per thousand). */
    void fill(long base, int items, Duration timeout) {
        call(command("fill", "base", base, "items", items), timeout);
    }

    /**
     * One drain in Node (see {@code peer.mjs}) of the jobs {@link #fill} added, by a fresh runner of concurrency 4:
     * with {@code batched}, a local queue of 100 and batched completions; otherwise graphile-worker's defaults.
     * Seconds run from the worker pool's start to the last completion written; each job's task counts its number.
     */
    record Drain(double seconds, double startupMillis, long completed, long missing, long twice, long foreign) {}

    Drain drain(long base, int items, boolean batched, Duration timeout) {
        Map<String, Object> r = call(command("drain", "base", base, "items", items, "batched", batched), timeout);
        return new Drain(number(r, "seconds"), number(r, "startupMs"), (long) number(r, "completed"),
                (long) number(r, "missing"), (long) number(r, "twice"), (long) number(r, "foreign"));
    }

    /** Jobs in graphile-worker's table right now. */
    long left(Duration timeout) {
        return (long) number(call(command("left"), timeout), "left");
    }

    /** The wake series' samples (nanoseconds, enqueue returned → task started) and the jobs left afterwards. */
    record Wake(List<Long> latencyNanos, long left) {}

    /**
     * With a runner of concurrency 4 waiting, adds {@code warmUp + jobs} jobs one at a time from a connection of its
     * own, {@code minGapMs}-{@code maxGapMs} apart (random), each after the previous one started; the first
     * {@code warmUp} are not recorded.
     */
    Wake wake(int jobs, int warmUp, long base, int minGapMs, int maxGapMs, Duration timeout) {
        Map<String, Object> r = call(command("wake", "jobs", jobs, "warmUp", warmUp, "base", base, "minGapMs",
                minGapMs, "maxGapMs", maxGapMs), timeout);
        List<Long> nanos = new ArrayList<>();
        for (Object o : (List<?>) r.get("latenciesNanos")) {
            nanos.add(((Number) o).longValue());
        }
        return new Wake(nanos, (long) number(r, "left"));
    }

    private static Map<String, Object> command(String name, Object... keysAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cmd", name);
        for (int i = 0; i < keysAndValues.length; i += 2) {
            m.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }

    /**
     * Sends one command and waits for its reply. Replies pair with commands by order, so one thread drives a peer
     * (the scenario's): nothing is held while the reply is awaited, and {@link #close} never waits for a call.
     */
    private Map<String, Object> call(Map<String, Object> command, Duration timeout) {
        String what = String.valueOf(command.get("cmd"));
        try {
            commands.write(Json.write(command));
            commands.write('\n');
            commands.flush();
        } catch (IOException e) {
            throw new IllegalStateException("graphile-worker peer: cannot send " + what + " (" + e + ")"
                    + stderrSummary(), e);
        }
        Map<String, Object> r = next(timeout, what);
        if (!Boolean.TRUE.equals(r.get("ok"))) {
            throw new IllegalStateException("graphile-worker peer: " + what + " failed: " + r.get("error"));
        }
        return r;
    }

    private Map<String, Object> next(Duration timeout, String what) {
        Map<String, Object> r;
        try {
            r = replies.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the graphile-worker peer's " + what, e);
        }
        if (r == null) {
            throw new IllegalStateException("graphile-worker peer: no answer to " + what + " within "
                    + timeout.toSeconds() + " s" + stderrSummary());
        }
        if (r == END_OF_OUTPUT) {
            replies.offer(END_OF_OUTPUT); // later calls see the end too
            throw new IllegalStateException("graphile-worker peer ended during " + what + exitSummary()
                    + stderrSummary());
        }
        return r;
    }

    private static double number(Map<String, Object> r, String key) {
        Object v = r.get(key);
        if (!(v instanceof Number n)) {
            throw new IllegalStateException("graphile-worker peer: no number " + key + " in " + r);
        }
        return n.doubleValue();
    }

    private void reply(String line) {
        if (line == null) {
            replies.offer(END_OF_OUTPUT);
            return;
        }
        try {
            replies.offer(Json.parseObject(line));
        } catch (RuntimeException e) {
            logLine("(not a reply) " + line);
        }
    }

    private void logLine(String line) {
        if (line == null) {
            return;
        }
        synchronized (stderrTail) {
            stderrTail.addLast(line);
            while (stderrTail.size() > 40) {
                stderrTail.removeFirst();
            }
        }
        log.warn("graphile-worker peer: {}", line);
    }

    private String stderrSummary() {
        synchronized (stderrTail) {
            return stderrTail.isEmpty() ? "" : "; its stderr ended with:\n" + String.join("\n", stderrTail);
        }
    }

    private String exitSummary() {
        try {
            if (process.waitFor(1, TimeUnit.SECONDS)) {
                return " (exit code " + process.exitValue() + ")";
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "";
    }

    private static Thread reader(String name, InputStream in, java.util.function.Consumer<String> sink) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    sink.accept(line);
                }
            } catch (IOException e) {
                log.debug("{}: {}", name, e.toString());
            } finally {
                sink.accept(null);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Override
    public void close() {
        try {
            commands.write("{\"cmd\":\"quit\"}\n");
            commands.flush();
            commands.close();
        } catch (IOException e) {
            log.debug("graphile-worker peer: cannot ask it to quit ({})", e.toString());
        }
        try {
            if (!process.waitFor(QUIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("graphile-worker peer did not quit within {} s; destroying it", QUIT_TIMEOUT.toSeconds());
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(QUIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
            stdoutReader.join(QUIT_TIMEOUT.toMillis());
            stderrReader.join(QUIT_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /** node-postgres settings for the database of a {@code jdbc:postgresql:} URL (its first host). */
    static Map<String, Object> connection(String jdbcUrl) {
        Properties p = org.postgresql.Driver.parseURL(jdbcUrl, new Properties());
        if (p == null) {
            throw new IllegalArgumentException("not a jdbc:postgresql: URL: " + JdbcUrls.redact(jdbcUrl));
        }
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("host", p.getProperty("PGHOST", "localhost").split(",")[0]);
        c.put("port", Integer.parseInt(p.getProperty("PGPORT", "5432").split(",")[0]));
        c.put("database", p.getProperty("PGDBNAME"));
        if (p.getProperty("user") != null) {
            c.put("user", p.getProperty("user"));
        }
        if (p.getProperty("password") != null) {
            c.put("password", p.getProperty("password"));
        }
        return c;
    }

    /**
     * The package directory in the cache, named by the digest of what the jar holds, so a changed lock file or
     * script gets a directory (and an {@code npm ci}) of its own. Files are written whole and renamed into place.
     */
    static Path unpackPackage() throws IOException {
        List<byte[]> contents = new ArrayList<>();
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e);
        }
        for (String f : FILES) {
            try (InputStream in = GraphileWorkerPeer.class.getResourceAsStream(RESOURCES + f)) {
                if (in == null) {
                    throw new IllegalStateException("the jar lacks " + RESOURCES + f);
                }
                byte[] b = in.readAllBytes();
                contents.add(b);
                digest.update(f.getBytes(StandardCharsets.UTF_8));
                digest.update(b);
            }
        }
        String id = HexFormat.of().formatHex(digest.digest()).substring(0, 16);
        Path dir = NodeRuntime.cacheDir().resolve("bench-graphile-worker-" + id);
        Files.createDirectories(dir);
        for (int i = 0; i < FILES.size(); i++) {
            Path target = dir.resolve(FILES.get(i));
            if (Files.isRegularFile(target) && java.util.Arrays.equals(Files.readAllBytes(target), contents.get(i))) {
                continue;
            }
            Path tmp = Files.createTempFile(dir, ".write-", ".tmp");
            Files.write(tmp, contents.get(i));
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        return dir;
    }
}
