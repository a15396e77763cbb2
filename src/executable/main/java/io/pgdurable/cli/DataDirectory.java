package io.pgdurable.cli;

import io.pgdurable.spi.ProviderException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The embedded PostgreSQL whose data outlives the process: a directory ({@code ~/.pgdurable} unless {@code
 * --data-dir} names another) owned by one pgdurable process at a time through a file lock. The owner starts
 * PostgreSQL on it with PostgreSQL's own durability settings and stops it on {@link #close()}; while it runs, other
 * commands attach to its server instead of starting one, and a second {@code serve} is refused.
 *
 * <p>Layout: {@code pgdata/} is PostgreSQL's data directory; {@code owner} is the lock file, holding the owner's
 * pid, command and, once the server accepts connections, its port. The lock is the kernel's: a process that dies
 * loses it, whatever the file still says.
 */
final class DataDirectory implements AutoCloseable {
    static final String PGDATA = "pgdata";
    static final String OWNER_FILE = "owner";
    /** How long a command waits for another process's server to come up, or for a short command to finish. */
    private static final Duration WAIT_FOR_OWNER = Duration.ofSeconds(60);
    /** Crash recovery after a killed owner runs inside the start, so the start may take longer than a fresh one. */
    private static final Duration STARTUP = Duration.ofSeconds(60);
    /** A server left by a killed owner ends a smart shutdown within seconds: its clients died with the owner. */
    private static final Duration ORPHAN_STOP = Duration.ofSeconds(30);
    private static final long POLL_MILLIS = 100;

    /**
     * Directories this JVM owns or is opening, by real path. Inside one JVM the lock file is never opened twice: on
     * Linux closing any descriptor of a file drops every lock the process holds on it.
     */
    private static final Map<Path, Local> HERE = new ConcurrentHashMap<>();

    /** This JVM's claim on a directory: the command holding it and, once its server runs, the server's URL. */
    private record Local(String command, CompletableFuture<String> url) {}

    private final Path dir;
    private final String url;
    private final String ownerDescription;
    private final Local local;
    private final FileChannel channel;
    private final FileLock lock;
    private final EmbeddedPostgres server;

    private DataDirectory(Path dir, String url, String ownerDescription, Local local, FileChannel channel,
                          FileLock lock, EmbeddedPostgres server) {
        this.dir = dir;
        this.url = url;
        this.ownerDescription = ownerDescription;
        this.local = local;
        this.channel = channel;
        this.lock = lock;
        this.server = server;
    }

    /**
     * The default directory: {@code $HOME/.pgdurable} (the {@code user.home} system property), one per user so that
     * every command of a user finds the same data.
     */
    static Path defaultLocation() {
        return Path.of(System.getProperty("user.home"), ".pgdurable");
    }

    /**
     * Opens {@code dir} for {@code command}: starts its server when no other process owns the directory; otherwise,
     * unless {@code exclusive}, attaches to the owner's server. An {@code exclusive} open (serve) is refused while
     * another serve owns the directory and waits for a shorter command to finish.
     */
    static DataDirectory open(Path dir, String command, boolean exclusive, PrintWriter notices) {
        Path abs = create(dir);
        Local mine = new Local(command, new CompletableFuture<>());
        Local existing = HERE.putIfAbsent(abs, mine);
        if (existing != null) {
            if (exclusive) {
                throw inUse(abs, existing.command(), ProcessHandle.current().pid());
            }
            return new DataDirectory(abs, awaitLocal(abs, existing), "this process (" + existing.command() + ")",
                    null, null, null, null);
        }
        try {
            DataDirectory opened = openAcrossProcesses(abs, command, exclusive, mine, notices);
            if (opened.server == null) {
                HERE.remove(abs, mine); // attached: this JVM owns nothing here
            }
            mine.url().complete(opened.url);
            return opened;
        } catch (RuntimeException e) {
            HERE.remove(abs, mine);
            mine.url().completeExceptionally(e);
            throw e;
        }
    }

    String url() {
        return url;
    }

    Path path() {
        return dir;
    }

    /** Whether this command started the server (and stops it on close) rather than using another's. */
    boolean owned() {
        return server != null;
    }

    /** Who runs the server this command attached to; null for the owner. */
    String ownerDescription() {
        return ownerDescription;
    }

    /** Stops the owned server, then gives up the directory; an attached command has nothing to release. */
    @Override
    public void close() {
        if (server == null) {
            return;
        }
        try {
            EmbeddedStop.close(server);
        } catch (IOException | RuntimeException e) {
            throw new ProviderException("embedded", "could not stop the embedded PostgreSQL in " + dir + ": "
                    + e.getMessage(), false, null, e);
        } finally {
            release(channel, lock);
            HERE.remove(dir, local);
        }
    }

    private static Path create(Path dir) {
        Path abs = dir.toAbsolutePath().normalize();
        try {
            Files.createDirectories(abs);
            return abs.toRealPath();
        } catch (IOException e) {
            throw new ProviderException("embedded", "cannot use " + abs + " as the data directory: "
                    + describe(e) + "; pass --data-dir DIR, --db JDBC_URL or (serve) --ephemeral", false, null, e);
        }
    }

    private static DataDirectory openAcrossProcesses(Path dir, String command, boolean exclusive, Local mine,
                                                     PrintWriter notices) {
        FileChannel channel;
        try {
            channel = FileChannel.open(dir.resolve(OWNER_FILE), StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new ProviderException("embedded", "cannot open " + dir.resolve(OWNER_FILE) + ": " + describe(e),
                    false, null, e);
        }
        long deadline = System.nanoTime() + WAIT_FOR_OWNER.toNanos();
        boolean waitingNoticed = false;
        try {
            while (true) {
                FileLock lock = channel.tryLock();
                if (lock != null) {
                    return own(dir, command, mine, channel, lock, notices);
                }
                Owner owner = Owner.read(channel);
                if (exclusive && "serve".equals(owner.command())) {
                    throw inUse(dir, owner.command(), owner.pid());
                }
                if (!exclusive && owner.port() > 0) {
                    channel.close();
                    return new DataDirectory(dir, jdbcUrl(owner.port()), owner.describe(), null, null, null, null);
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new ProviderException("embedded", "the data directory " + dir + " is held by "
                            + owner.describe() + ", which did not " + (exclusive ? "finish" : "start its server")
                            + " within " + WAIT_FOR_OWNER.toSeconds() + " s", true, null, null);
                }
                if (!waitingNoticed) {
                    notices.println("waiting for " + owner.describe() + " "
                            + (exclusive ? "to finish with " : "to start the embedded PostgreSQL in ") + dir + " ...");
                    notices.flush();
                    waitingNoticed = true;
                }
                TimeUnit.MILLISECONDS.sleep(POLL_MILLIS);
            }
        } catch (IOException e) {
            closeQuietly(channel);
            throw new ProviderException("embedded", "cannot lock " + dir.resolve(OWNER_FILE) + ": " + describe(e),
                    false, null, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeQuietly(channel);
            throw new ProviderException("embedded", "interrupted while waiting for the data directory " + dir,
                    true, null, e);
        } catch (RuntimeException e) {
            closeQuietly(channel); // own() has closed it already when it failed; closing twice is harmless
            throw e;
        }
    }

    /** With the lock held: record the owner, stop a server a killed owner left running, start ours. */
    private static DataDirectory own(Path dir, String command, Local mine, FileChannel channel, FileLock lock,
                                     PrintWriter notices) throws IOException {
        long pid = ProcessHandle.current().pid();
        try {
            Owner.write(channel, new Owner(pid, command, 0));
            Path pgdata = dir.resolve(PGDATA);
            stopOrphan(pgdata, notices);
            boolean fresh = !Files.exists(pgdata.resolve("PG_VERSION"));
            notices.println((fresh ? "creating" : "starting") + " the embedded PostgreSQL in " + pgdata + " ...");
            notices.flush();
            EmbeddedPostgres server;
            try {
                server = EmbeddedPostgres.builder()
                        .setDataDirectory(pgdata)
                        .setCleanDataDirectory(false)
                        // Database.close stops it after the command's own shutdown, not beside it.
                        .setRegisterShutdownHook(false)
                        .setPGStartupWait(STARTUP)
                        // The embedded defaults trade durability for test speed; this server keeps real data.
                        .setServerConfig("fsync", "on")
                        .setServerConfig("synchronous_commit", "on")
                        .setServerConfig("full_page_writes", "on")
                        .start();
            } catch (IOException | RuntimeException e) {
                throw new ProviderException("embedded", "could not start the embedded PostgreSQL in " + pgdata
                        + ": " + describe(e) + " (--verbose shows PostgreSQL's log)", false, null, e);
            }
            Owner.write(channel, new Owner(pid, command, server.getPort()));
            return new DataDirectory(dir, server.getJdbcUrl("postgres", "postgres"), null, mine, channel, lock,
                    server);
        } catch (IOException | RuntimeException e) {
            release(channel, lock);
            throw e;
        }
    }

    /**
     * A server whose owner was killed keeps running (pg_ctl detaches it) and blocks a new start on its data. It gets
     * a smart shutdown (SIGTERM): its clients died with the owner, so it checkpoints and exits. A postmaster.pid
     * naming no live postgres process is stale; PostgreSQL itself replaces it unless the pid was reused, so it is
     * removed (this process holds the directory's lock).
     */
    private static void stopOrphan(Path pgdata, PrintWriter notices) throws IOException {
        Path pidFile = pgdata.resolve("postmaster.pid");
        Optional<Long> pid = postmasterPid(pidFile);
        if (pid.isEmpty()) {
            return;
        }
        Optional<ProcessHandle> process = ProcessHandle.of(pid.get()).filter(ProcessHandle::isAlive);
        boolean postgres = process.flatMap(p -> p.info().command())
                .map(c -> Path.of(c).getFileName().toString().equals("postgres")).orElse(false);
        if (!postgres) {
            Files.deleteIfExists(pidFile);
            return;
        }
        notices.println("stopping the embedded PostgreSQL (pid " + pid.get() + ") left running by a pgdurable "
                + "process that ended without stopping it ...");
        notices.flush();
        ProcessHandle orphan = process.get();
        orphan.destroy();
        // PostgreSQL removes postmaster.pid as it exits; watched beside the process because an exited orphan may
        // linger as a zombie where nothing reaps the children of init.
        long deadline = System.nanoTime() + ORPHAN_STOP.toNanos();
        try {
            while (orphan.isAlive() && Files.exists(pidFile)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new ProviderException("embedded", "the embedded PostgreSQL left running in " + pgdata
                            + " (pid " + pid.get() + ") did not stop within " + ORPHAN_STOP.toSeconds()
                            + " s; stop it (kill " + pid.get() + ") and try again", true, null, null);
                }
                TimeUnit.MILLISECONDS.sleep(POLL_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProviderException("embedded", "interrupted while stopping the embedded PostgreSQL left "
                    + "running in " + pgdata, true, null, e);
        }
    }

    private static Optional<Long> postmasterPid(Path pidFile) throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(pidFile, StandardCharsets.UTF_8);
        } catch (java.nio.file.NoSuchFileException e) {
            return Optional.empty();
        }
        try {
            return lines.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(lines.get(0).trim()));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    private static String awaitLocal(Path dir, Local owner) {
        try {
            return owner.url().get(WAIT_FOR_OWNER.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ProviderException p) {
                throw p;
            }
            throw new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new ProviderException("embedded", "the embedded PostgreSQL in " + dir + " did not start within "
                    + WAIT_FOR_OWNER.toSeconds() + " s", true, null, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProviderException("embedded", "interrupted while waiting for the embedded PostgreSQL in "
                    + dir, true, null, e);
        }
    }

    static ProviderException inUse(Path dir, String command, long pid) {
        return ProviderException.permanent("embedded", "the data directory " + dir + " is in use by pgdurable "
                + command + " (pid " + pid + "); stop it first, or pass another --data-dir, --ephemeral or --db");
    }

    private static String jdbcUrl(int port) {
        return "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    }

    private static void release(FileChannel channel, FileLock lock) {
        try {
            if (lock.isValid()) {
                lock.release();
            }
        } catch (IOException e) {
            // closing the channel below releases it too
        }
        closeQuietly(channel);
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // nothing left to do: the process's exit releases the descriptor
        }
    }

    private static String describe(Throwable e) {
        Throwable base = e;
        while (base.getCause() != null && base.getCause() != base && base.getMessage() == null) {
            base = base.getCause();
        }
        String text = base.getMessage() != null ? base.getMessage() : base.getClass().getSimpleName();
        if (e instanceof java.nio.file.AccessDeniedException) {
            text = "permission denied (" + text + ")";
        }
        return text;
    }

    /** The owner file's one line: {@code <pid> <command> <port>}, port 0 until the server accepts connections. */
    private record Owner(long pid, String command, int port) {
        static Owner read(FileChannel channel) throws IOException {
            ByteBuffer buffer = ByteBuffer.allocate(256);
            int n = channel.read(buffer, 0);
            String[] parts = (n <= 0 ? "" : new String(buffer.array(), 0, n, StandardCharsets.UTF_8)).trim()
                    .split("\\s+");
            try {
                return new Owner(Long.parseLong(parts[0]), parts[1], Integer.parseInt(parts[2]));
            } catch (RuntimeException e) {
                return new Owner(-1, "(starting)", 0); // the owner has locked the file but not written it yet
            }
        }

        String describe() {
            return pid < 0 ? "another pgdurable process" : "pgdurable " + command + " (pid " + pid + ")";
        }

        static void write(FileChannel channel, Owner owner) throws IOException {
            byte[] line = (owner.pid() + " " + owner.command() + " " + owner.port() + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            channel.truncate(0);
            channel.write(ByteBuffer.wrap(line), 0);
            channel.force(false);
        }
    }
}
