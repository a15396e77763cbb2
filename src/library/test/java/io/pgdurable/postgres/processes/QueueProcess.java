package io.pgdurable.postgres.processes;

import io.pgdurable.longpoll.LongPollView;
import io.pgdurable.postgres.Identifiers;
import io.pgdurable.postgres.MigrationPolicy;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.PostgresProviderConfig;
import io.pgdurable.spi.FetchedWorkItem;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One process of {@link MultiProcessTest}, run in a JVM of its own on the test classpath:
 * {@code producer <jdbcUrl> <schema> <name> <items>} enqueues {@code items} activities named after it;
 * {@code consumer <jdbcUrl> <schema> <name> <threads>} long-polls with that many threads and, for each item, writes
 * a ledger row and then acks. Both long-poll (each holds its one listener), print {@code listening} once their
 * listener is up, and run until a line {@code stop} (or the end of input) arrives; then they print what they did
 * and exit 0. Any failure prints {@code failed: …} and exits 1.
 */
public final class QueueProcess {
    private QueueProcess() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        PostgresProviderConfig config = PostgresProviderConfig.builder()
                .jdbcUrl(args[1])
                .schema(args[2])
                .poolSize(mode.equals("consumer") ? Integer.parseInt(args[4]) + 1 : 2)
                .migrationPolicy(MigrationPolicy.VERIFY_ONLY)
                .longPolling(true)
                .build();
        try (PostgresProvider provider = PostgresProvider.create(config)) {
            awaitListening(provider);
            System.out.println("listening");
            System.out.flush();
            if (mode.equals("producer")) {
                int items = Integer.parseInt(args[4]);
                for (int i = 0; i < items; i++) {
                    provider.enqueueForWorker(new WorkItem.ActivityExecute(args[3], 1, i, "Ledger", "{}"));
                }
                System.out.println("produced " + items);
                System.out.flush();
                awaitStop();
            } else {
                consume(provider, args[1], args[2], args[3], Integer.parseInt(args[4]));
            }
        } catch (Throwable t) {
            System.out.println("failed: " + t);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    private static void consume(PostgresProvider provider, String url, String schema, String name, int threads)
            throws Exception {
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong consumed = new AtomicLong();
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        String ledger = "INSERT INTO " + Identifiers.quote(schema) + ".ledger (instance_id, activity_id, consumer) "
                + "VALUES (?, ?, ?)";
        for (int t = 0; t < threads; t++) {
            Thread w = new Thread(() -> {
                try (Connection c = DriverManager.getConnection(url);
                     PreparedStatement ps = c.prepareStatement(ledger)) {
                    while (running.get()) {
                        Optional<FetchedWorkItem> got = provider.fetchWorkItem(Duration.ofMinutes(5),
                                Duration.ofMillis(500), null, TagFilter.defaultOnly());
                        if (got.isEmpty()) {
                            continue;
                        }
                        WorkItem.ActivityExecute item = (WorkItem.ActivityExecute) got.get().item();
                        ps.setString(1, item.instance());
                        ps.setLong(2, item.id());
                        ps.setString(3, name);
                        ps.executeUpdate();
                        provider.ackWorkItem(got.get().lockToken(), null);
                        consumed.incrementAndGet();
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }, name + "-" + t);
            w.start();
            workers.add(w);
        }
        awaitStop();
        running.set(false);
        for (Thread w : workers) {
            w.join(10_000);
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("consumer thread failed", failures.get(0));
        }
        System.out.println("consumed " + consumed.get());
        System.out.flush();
    }

    private static void awaitListening(PostgresProvider provider) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!provider.longPolling().map(LongPollView::isListening).orElse(false)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the listener was not up within 30 s");
            }
            Thread.sleep(20);
        }
    }

    private static void awaitStop() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("stop")) {
                return;
            }
        }
    }
}
