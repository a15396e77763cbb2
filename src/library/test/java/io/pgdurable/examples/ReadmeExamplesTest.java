package io.pgdurable.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.AckResult;
import io.pgdurable.spi.TagFilter;
import java.time.Duration;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The README shows code that compiles and runs: the snippet in README.md must match QuickStart.java verbatim. */
class ReadmeExamplesTest {

    @Test
    void quick_start_runs_an_orchestration_to_completion() {
        String schema = TestDatabase.newSchemaName("readme");
        try {
            assertEquals("Completed", QuickStart.run(TestDatabase.url(), schema));
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void the_round_trip_examples_ack_everything_once() {
        String schema = TestDatabase.newSchemaName("readme_ack");
        try (PostgresProvider provider = PostgresProvider.create(TestDatabase.config(schema).build())) {
            List<AckResult> results = AckRoundTripsExample.run(provider);
            assertEquals(4, results.size(), "the next item and the three fetched after it");
            assertTrue(results.stream().allMatch(AckResult::isAcked), results.toString());
            assertTrue(provider.fetchWorkItem(Duration.ofMinutes(1), Duration.ZERO, null, TagFilter.defaultOnly())
                    .isEmpty(), "all five acked");
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void readme_shows_the_round_trip_examples_exactly_as_compiled() throws IOException {
        assertReadmeShows("AckRoundTripsExample.java", "ack-round-trips", "        ");
        assertReadmeShows("AckRoundTripsExample.java", "ack-list", "        ");
    }

    @Test
    void readme_shows_the_quick_start_exactly_as_compiled() throws IOException {
        assertReadmeShows("QuickStart.java", "quick-start", "        ");
    }

    /** The lines between {@code README:<name>:begin} and {@code :end} of {@code file}, unindented, are in README.md. */
    private static void assertReadmeShows(String file, String name, String indent) throws IOException {
        List<String> source = Files.readAllLines(Path.of("src/library/test/java/io/pgdurable/examples/" + file));
        int begin = source.indexOf(source.stream().filter(l -> l.contains("README:" + name + ":begin")).findFirst()
                .orElseThrow()) + 1;
        int end = source.indexOf(source.stream().filter(l -> l.contains("README:" + name + ":end")).findFirst()
                .orElseThrow());
        String snippet = source.subList(begin, end).stream()
                .map(l -> l.startsWith(indent) ? l.substring(indent.length()) : l.strip())
                .collect(Collectors.joining("\n"));
        String readme = Files.readString(Path.of("README.md"));
        assertTrue(readme.contains(snippet), "README.md must contain " + name + " as compiled:\n" + snippet);
    }
}
