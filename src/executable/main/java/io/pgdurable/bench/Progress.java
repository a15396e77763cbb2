package io.pgdurable.bench;

import java.io.PrintWriter;
import java.util.Locale;

/** Timestamped progress lines on the command's output, flushed at once so a long run shows where it is. */
final class Progress {
    private final PrintWriter out;
    private final long start = System.nanoTime();

    Progress(PrintWriter out) {
        this.out = out;
    }

    synchronized void line(String format, Object... args) {
        double s = (System.nanoTime() - start) / 1e9;
        out.println(String.format(Locale.ROOT, "[%6.1f s] ", s) + String.format(Locale.ROOT, format, args));
        out.flush();
    }

    double elapsedSeconds() {
        return (System.nanoTime() - start) / 1e9;
    }
}
