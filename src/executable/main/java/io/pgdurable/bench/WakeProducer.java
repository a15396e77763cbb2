package io.pgdurable.bench;

import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.WorkItem;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The writer of a wake series in a JVM of its own, as a client process or another node would be: the JVM that waits
 * shares nothing with it but the database. Started by {@link #start}, it reads one command per line on stdin,
 * {@code provider <job>} (enqueueForWorker through a provider with default settings) or {@code sql <job>} (the SQL
 * API's {@code enqueue_activity} on a plain JDBC connection of its own), and answers each with {@code <job> <nanos>},
 * its {@link System#nanoTime()} when the call returned (after the commit). On Linux that clock is the machine's
 * monotonic clock, the same in every process, so the waiting JVM subtracts it from its own readings.
 */
final class WakeProducer implements AutoCloseable {
    static final String INSTANCE = "peers-wake";
    static final String NAME = "PeersWake";
    private static final long START_SECONDS = 60;

    /** How a job is written. */
    enum Writer {
        PROVIDER("provider"),
        SQL("sql");

        final String command;

        Writer(String command) {
            this.command = command;
        }
    }

    private final Process process;
    private final BufferedReader replies;
    private final java.io.Writer commands;
    private final Path log;

    private WakeProducer(Process process, Path log) {
        this.process = process;
        this.log = log;
        this.replies = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    }

    /** Starts the writer on {@code schema} (migrated already) and waits until it is ready. */
    static WakeProducer start(String url, String schema) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = Files.createTempFile("pgdurable-wake-producer", ".log");
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                WakeProducer.class.getName(), url, schema);
        pb.redirectError(log.toFile());
        WakeProducer w = new WakeProducer(pb.start(), log);
        String first = w.replies.readLine();
        if (!"ready".equals(first)) {
            w.close();
            throw new IllegalStateException("wake producer did not start (" + first + "): " + w.logTail());
        }
        return w;
    }

    /** Writes job {@code job}; returns the writer's clock when the write returned. */
    long write(Writer how, long job) throws IOException {
        commands.write(how.command + " " + job + "\n");
        commands.flush();
        String reply = replies.readLine();
        String[] f = reply == null ? new String[0] : reply.split(" ");
        if (f.length != 2 || Long.parseLong(f[0]) != job) {
            throw new IllegalStateException("wake producer: no answer for job " + job + " (" + reply + "): "
                    + logTail());
        }
        return Long.parseLong(f[1]);
    }

    private String logTail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    @Override
    public void close() {
        try {
            commands.write("quit\n");
            commands.flush();
        } catch (IOException ignored) {
            // the process is gone already
        }
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try {
            Files.deleteIfExists(log);
        } catch (IOException ignored) {
            // a temporary file
        }
    }

    /** The writer's process: {@code <url> <schema>}, commands on stdin, answers on stdout, logs on stderr. */
    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err); // logs must not mix with the answers
        String url = args[0];
        String schema = args[1];
        try (PostgresProvider provider = PostgresProvider.create(PostgresProviderConfig.builder().jdbcUrl(url)
                     .schema(schema).migrationPolicy(MigrationPolicy.VERIFY_ONLY).poolSize(2).build());
             Connection c = DriverManager.getConnection(url);
             PreparedStatement sql = c.prepareStatement("SELECT " + Identifiers.quote(schema)
                     + ".enqueue_activity(?, 1, ?, ?, '{}')")) {
            answers.println("ready");
            answers.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null && !line.equals("quit"); line = in.readLine()) {
                String[] f = line.split(" ");
                long job = Long.parseLong(f[1]);
                if (f[0].equals(Writer.PROVIDER.command)) {
                    provider.enqueueForWorker(new WorkItem.ActivityExecute(INSTANCE, 1, job, NAME, "{}"));
                } else {
                    sql.setString(1, INSTANCE);
                    sql.setLong(2, job);
                    sql.setString(3, NAME);
                    sql.execute();
                }
                long sent = System.nanoTime();
                answers.println(job + " " + sent);
                answers.flush();
            }
        }
    }
}
