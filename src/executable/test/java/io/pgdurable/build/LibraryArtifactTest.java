package io.pgdurable.build;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The library a runtime adds holds only the SPI, the provider, long polling and the metrics binder: none of the
 * command's classes. Read from wherever the provider class was loaded (the library's classes folder in the
 * reactor build, or its jar).
 */
class LibraryArtifactTest {

    private static final List<String> COMMAND_PACKAGES =
            List.of("io/pgdurable/cli/", "io/pgdurable/bench/", "io/pgdurable/chaos/", "io/pgdurable/durabletask/");

    @Test
    void the_library_holds_no_class_of_the_command() throws IOException, URISyntaxException {
        Path location = Path.of(PostgresProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> entries = entriesOf(location);
        assertTrue(entries.contains("io/pgdurable/postgres/PostgresProvider.class"), "read the library at " + location);
        List<String> leaked = entries.stream()
                .filter(e -> COMMAND_PACKAGES.stream().anyMatch(e::startsWith))
                .collect(Collectors.toList());
        assertEquals(List.of(), leaked, "command classes in the library at " + location);
    }

    private static List<String> entriesOf(Path location) throws IOException {
        if (Files.isDirectory(location)) {
            try (Stream<Path> files = Files.walk(location)) {
                return files.filter(Files::isRegularFile)
                        .map(p -> location.relativize(p).toString().replace('\\', '/'))
                        .collect(Collectors.toList());
            }
        }
        try (JarFile jar = new JarFile(location.toFile())) {
            return jar.stream().map(e -> e.getName()).collect(Collectors.toList());
        }
    }
}
