package io.pgdurable.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.durabletask.SidecarConfig;
import io.pgdurable.durabletask.SidecarServer;
import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The Durable Task sample of docs/durabletask.md runs against a sidecar, and the docs show it as compiled. */
class DurableTaskSampleTest {

    @Test
    void the_sample_completes_an_orchestration_through_the_sidecar() throws Exception {
        String schema = TestDatabase.newSchemaName("dt_sample");
        try (PostgresProvider provider = PostgresProvider.create(TestDatabase.config(schema).poolSize(6)
                .longPolling(true).build());
             SidecarServer sidecar = SidecarServer.start(provider, SidecarConfig.defaults(schema).withPort(0))) {
            assertEquals("COMPLETED: Hello, pgdurable! (one durable second later)",
                    DurableTaskSample.run(sidecar.port()));
        } finally {
            TestDatabase.dropSchema(schema);
        }
    }

    @Test
    void the_docs_show_the_sample_exactly_as_compiled() throws IOException {
        List<String> source = Files.readAllLines(Path.of("src/executable/test/java/io/pgdurable/examples/DurableTaskSample.java"));
        int begin = indexOf(source, "docs:durabletask-sample:begin") + 1;
        int end = indexOf(source, "docs:durabletask-sample:end");
        String indent = "        ";
        String snippet = source.subList(begin, end).stream()
                .map(l -> l.startsWith(indent) ? l.substring(indent.length()) : l.strip())
                .collect(Collectors.joining("\n"));
        String docs = Files.readString(Path.of("docs/durabletask.md"));
        assertTrue(docs.contains(snippet), "docs/durabletask.md must contain the sample as compiled:\n" + snippet);
    }

    private static int indexOf(List<String> lines, String marker) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(marker)) {
                return i;
            }
        }
        throw new IllegalStateException("marker not found: " + marker);
    }
}
