package io.pgdurable.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * What a measurement window cost, read at its two ends so the costs divide by the units it counted: the server's
 * CPU time (every process of the PostgreSQL cluster, from {@code /proc}), the client JVM's CPU time, the WAL the
 * server wrote and the client's write calls (one per round trip, from {@code /proc/self/io}).
 *
 * <p>The server's CPU is the postmaster's own time, its reaped children's ({@code cutime + cstime}, which keeps
 * the time of autovacuum workers and connections that ended inside the window) and every live child's. It is read
 * only when the server runs on this machine (the bench's database is on loopback); otherwise, and on systems
 * without {@code /proc}, those figures are NaN and {@link #unavailable()} says why. {@code /proc} counts in
 * USER_HZ, which Linux fixes at 100 per second, so the server's CPU has 10 ms steps per process: a window of
 * seconds under load spends thousands of them.
 */
final class UnitCosts {
    private static final double NANOS_PER_TICK = 1e9 / 100;
    private static final Path PROC = Path.of("/proc");

    /** One end of a window. Server fields are NaN when {@link #unavailable()} is set. */
    record Reading(double serverCpuNanos, long clientCpuNanos, double walBytes, double clientWrites) {
    }

    /** What a window cost in total (end minus start). */
    record Spent(double serverCpuMillis, double clientCpuMillis, double walBytes, double clientWrites) {
    }

    private final ServerStatementCounter counter;
    private final long postmaster;
    private final String unavailable;

    private UnitCosts(ServerStatementCounter counter, long postmaster, String unavailable) {
        this.counter = counter;
        this.postmaster = postmaster;
        this.unavailable = unavailable;
    }

    /** Finds the server's postmaster from the counter's own backend, when the server runs here. */
    static UnitCosts locate(ServerStatementCounter counter) {
        long backend = counter.backendPid();
        try {
            String[] own = stat(backend);
            if (own == null || !own[0].startsWith("postgres")) {
                return new UnitCosts(counter, -1, "the server's processes are not on this machine (no local "
                        + "process " + backend + " named postgres)");
            }
            long postmaster = Long.parseLong(own[2]);
            String[] pm = stat(postmaster);
            if (pm == null) {
                return new UnitCosts(counter, -1, "the server's postmaster (" + postmaster + ") is not readable");
            }
            ownWriteCalls();
            return new UnitCosts(counter, postmaster, null);
        } catch (IOException | RuntimeException e) {
            return new UnitCosts(counter, -1, "/proc is not readable here: " + e);
        }
    }

    /** Why the server's CPU is not measured, or null when it is. */
    String unavailable() {
        return unavailable;
    }

    Map<String, Object> describe() {
        return unavailable == null
                ? Map.of("serverCpu", "/proc of postmaster " + postmaster + " and its children", "clientWrites",
                        "/proc/self/io syscw")
                : Map.of("serverCpu", "not measured: " + unavailable);
    }

    Reading read() {
        double server = Double.NaN;
        double writes = Double.NaN;
        if (unavailable == null) {
            try {
                server = serverCpuTicks() * NANOS_PER_TICK;
                writes = ownWriteCalls();
            } catch (IOException e) {
                throw new IllegalStateException("cannot read /proc: " + e.getMessage(), e);
            }
        }
        long client = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
        return new Reading(server, client, counter.walBytes(), writes);
    }

    static Spent between(Reading start, Reading end) {
        return new Spent((end.serverCpuNanos() - start.serverCpuNanos()) / 1e6,
                (end.clientCpuNanos() - start.clientCpuNanos()) / 1e6, end.walBytes() - start.walBytes(),
                end.clientWrites() - start.clientWrites());
    }

    private long serverCpuTicks() throws IOException {
        String[] pm = stat(postmaster);
        if (pm == null) {
            throw new IOException("the postmaster " + postmaster + " is gone");
        }
        long ticks = ticks(pm, 12) + ticks(pm, 13) + ticks(pm, 14) + ticks(pm, 15);
        String parent = Long.toString(postmaster);
        try (DirectoryStream<Path> all = Files.newDirectoryStream(PROC, p -> isPid(p.getFileName().toString()))) {
            for (Path p : all) {
                String[] s = stat(Long.parseLong(p.getFileName().toString()));
                if (s != null && s[2].equals(parent)) {
                    ticks += ticks(s, 12) + ticks(s, 13);
                }
            }
        }
        return ticks;
    }

    private static long ticks(String[] stat, int field) {
        return Long.parseLong(stat[field]);
    }

    private static boolean isPid(String name) {
        for (int i = 0; i < name.length(); i++) {
            if (!Character.isDigit(name.charAt(i))) {
                return false;
            }
        }
        return !name.isEmpty();
    }

    /**
     * The fields of {@code /proc/<pid>/stat} from the command name on, so index i is proc(5)'s field i + 2:
     * [0] comm, [1] state, [2] ppid, ..., [12] utime, [13] stime, [14] cutime, [15] cstime.
     * Null when the process is gone or its file cannot be read.
     */
    private static String[] stat(long pid) {
        String line;
        try {
            line = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            // gone before the open (no such file) or between the listing and the read (ESRCH, "No such process")
            return null;
        }
        int open = line.indexOf('(');
        int close = line.lastIndexOf(')'); // the name may itself hold spaces and parentheses
        String[] rest = line.substring(close + 2).trim().split(" ");
        String[] out = new String[rest.length + 1];
        out[0] = line.substring(open + 1, close);
        System.arraycopy(rest, 0, out, 1, rest.length);
        return out;
    }

    private static double ownWriteCalls() throws IOException {
        for (String line : Files.readAllLines(PROC.resolve("self").resolve("io"), StandardCharsets.US_ASCII)) {
            if (line.startsWith("syscw:")) {
                return Long.parseLong(line.substring(6).trim());
            }
        }
        throw new IOException("/proc/self/io has no syscw line");
    }
}
