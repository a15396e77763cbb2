package io.pgdurable.cli;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;

/**
 * Stops an embedded PostgreSQL to the end even on an interrupted thread. {@link EmbeddedPostgres#close()} waits for
 * {@code pg_ctl stop} and then deletes the server's files; an interrupt flag left set cut that wait short, and the
 * files went from under a postmaster that kept running (serve, which is stopped by an interrupt, did this in CI).
 * {@code pg_ctl} bounds the stop itself; the flag is restored after it.
 */
public final class EmbeddedStop {
    private EmbeddedStop() {}

    public static void close(EmbeddedPostgres server) throws IOException {
        boolean interrupted = Thread.interrupted();
        try {
            server.close();
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
