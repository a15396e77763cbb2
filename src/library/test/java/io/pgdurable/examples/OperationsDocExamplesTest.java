package io.pgdurable.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import io.pgdurable.spi.TagFilter;
import io.pgdurable.spi.WorkItem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * docs/operations.md cannot rot: its registration example is {@link MetricsExample} as compiled, and every
 * {@code pgdurable.*} meter a long-polling provider registers is named on the page.
 */
class OperationsDocExamplesTest {
    private static final Path PAGE = Path.of("docs/operations.md");

    @Test
    void the_registration_example_runs_and_every_meter_it_registers_is_documented() throws IOException {
        String schema = TestDatabase.newSchemaName("ops_doc");
        MeterRegistry registry = new SimpleMeterRegistry();
        Set<String> names = new TreeSet<>();
        try (PostgresProvider provider = MetricsExample.start(TestDatabase.url(), schema, registry)) {
            provider.enqueueForWorker(new WorkItem.ActivityExecute("doc", 1, 1, "A", "{}"));
            provider.ackWorkItem(provider.fetchWorkItem(Duration.ofMinutes(1), Duration.ZERO, null,
                    TagFilter.defaultOnly()).orElseThrow().lockToken(), null);
            assertEquals(1, registry.find("pgdurable.operations").tags("schema", schema, "operation", "ack",
                    "queue", "worker", "outcome", "ok").timer().count());
            for (Meter m : registry.getMeters()) {
                names.add(m.getId().getName());
            }
        } finally {
            TestDatabase.dropSchema(schema);
        }
        String page = Files.readString(PAGE);
        // A registry without native histograms (this simple one) shows the timers' buckets as derived
        // "<timer>.histogram" gauges: Micrometer's, not ours.
        List<String> undocumented = names.stream().filter(n -> n.startsWith("pgdurable."))
                .filter(n -> !n.endsWith(".histogram")).filter(n -> !page.contains("`" + n + "`")).toList();
        assertTrue(names.size() > 15, "meters: " + names);
        assertEquals(List.of(), undocumented, "docs/operations.md does not name these meters");
        assertTrue(names.stream().anyMatch(n -> n.startsWith("hikaricp.")), "the pool's meters: " + names);
        assertTrue(page.contains("hikaricp_"), "the page mentions the pool's meters");
    }

    @Test
    void the_page_shows_the_registration_example_exactly_as_compiled() throws IOException {
        List<String> source = Files.readAllLines(Path.of("src/library/test/java/io/pgdurable/examples/MetricsExample.java"));
        int begin = indexOf(source, "docs/operations.md:register:begin") + 1;
        int end = indexOf(source, "docs/operations.md:register:end");
        String indent = "        ";
        String snippet = source.subList(begin, end).stream()
                .map(l -> l.startsWith(indent) ? l.substring(indent.length()) : l.strip())
                .collect(Collectors.joining("\n"));
        assertTrue(Files.readString(PAGE).contains("```java\n" + snippet + "\n```"),
                "docs/operations.md must show the registration example as compiled:\n" + snippet);
    }

    private static int indexOf(List<String> lines, String marker) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(marker)) {
                return i;
            }
        }
        throw new AssertionError("marker not found: " + marker);
    }
}
