package io.pgdurable.build;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The command uses the library as any application would: through its public packages. No main class of the
 * executable imports (or names) a class of {@code io.pgdurable.internal}, the library's engine, which may change in
 * any release.
 */
class InternalImportsTest {
    private static final Path MAIN = Path.of("src/executable/main/java");
    /** An import, or a fully qualified name in code, of anything in the library's internal packages. */
    private static final Pattern INTERNAL = Pattern.compile("\\bio\\.pgdurable\\.internal\\b");

    @Test
    void no_main_class_of_the_executable_imports_the_library_internals() throws IOException {
        assertTrue(Files.isDirectory(MAIN), "tests run at the top of the checkout; " + MAIN.toAbsolutePath()
                + " is missing");
        List<String> offenders = new ArrayList<>();
        int read = 0;
        try (Stream<Path> files = Files.walk(MAIN)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
                read++;
                if (INTERNAL.matcher(Files.readString(f)).find()) {
                    offenders.add(MAIN.relativize(f).toString());
                }
            }
        }
        assertTrue(read > 10, "read the executable's sources (" + read + " files)");
        assertEquals(List.of(), offenders, "main classes of the executable that import or name io.pgdurable.internal");
    }
}
