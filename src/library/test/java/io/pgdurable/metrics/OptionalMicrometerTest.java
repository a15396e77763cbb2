package io.pgdurable.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.TestDatabase;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Micrometer is an optional dependency: only the metrics binding (and the CLI and benchmark that ship it) may name
 * it, and the provider runs with Micrometer absent from the class path.
 */
class OptionalMicrometerTest {
    /** Packages allowed to reference Micrometer: the binding itself, and the command line tool that bundles it. */
    private static final List<String> ALLOWED = List.of("io/pgdurable/metrics/", "io/pgdurable/cli/",
            "io/pgdurable/bench/");

    private static Path mainClasses() throws Exception {
        return Path.of(PostgresProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    @Test
    void no_class_outside_the_metrics_binding_references_micrometer() throws Exception {
        Path root = mainClasses();
        List<String> offenders = new ArrayList<>();
        int checked = 0;
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
                String name = root.relativize(f).toString().replace('\\', '/');
                if (ALLOWED.stream().anyMatch(name::startsWith)) {
                    continue;
                }
                checked++;
                try (InputStream in = Files.newInputStream(f)) {
                    for (String s : utf8Constants(new DataInputStream(in))) {
                        if (s.contains("io/micrometer")) {
                            offenders.add(name + " -> " + s);
                        }
                    }
                }
            }
        }
        assertTrue(checked > 50, "only " + checked + " classes found under " + root);
        assertEquals(List.of(), offenders, "core classes reference Micrometer");
        try (InputStream in = Files.newInputStream(root.resolve("io/pgdurable/metrics/ProviderMeters.class"))) {
            assertTrue(utf8Constants(new DataInputStream(in)).stream().anyMatch(s -> s.contains("io/micrometer")),
                    "the scan finds a reference where there is one (the binding's)");
        }
    }

    @Test
    void the_provider_runs_with_micrometer_absent() throws Exception {
        Path testClasses = Path.of(OptionalMicrometerTest.class.getProtectionDomain().getCodeSource().getLocation()
                .toURI());
        ClassLoader app = OptionalMicrometerTest.class.getClassLoader();
        // pgdurable's classes are loaded afresh from the build output; everything else comes from the application
        // class loader, except Micrometer, which is not there at all.
        ClassLoader withoutMicrometer = new ClassLoader(ClassLoader.getPlatformClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.startsWith("io.micrometer.") || name.startsWith("io.pgdurable.")) {
                    throw new ClassNotFoundException(name);
                }
                return app.loadClass(name);
            }
        };
        try (URLClassLoader isolated = new URLClassLoader(new URL[] {mainClasses().toUri().toURL(),
                testClasses.toUri().toURL()}, withoutMicrometer)) {
            @SuppressWarnings("unchecked")
            UnaryOperator<String> scenario = (UnaryOperator<String>) isolated
                    .loadClass(WithoutMicrometer.class.getName()).getDeclaredConstructor().newInstance();
            String schema = TestDatabase.newSchemaName("no_micrometer");
            try {
                assertEquals("micrometer absent; enqueued, fetched and acked with long polling",
                        scenario.apply(TestDatabase.url() + "\n" + schema));
            } finally {
                TestDatabase.dropSchema(schema);
            }
        }
    }

    /** The UTF-8 entries of a class file's constant pool (class names, descriptors, string literals). */
    private static List<String> utf8Constants(DataInputStream in) throws IOException {
        if (in.readInt() != 0xCAFEBABE) {
            throw new IOException("not a class file");
        }
        in.readUnsignedShort(); // minor
        in.readUnsignedShort(); // major
        int count = in.readUnsignedShort();
        List<String> out = new ArrayList<>();
        for (int i = 1; i < count; i++) {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case 1 -> out.add(in.readUTF());
                case 3, 4 -> in.skipNBytes(4); // int, float
                case 5, 6 -> { // long, double: two slots
                    in.skipNBytes(8);
                    i++;
                }
                case 7, 8, 16, 19, 20 -> in.skipNBytes(2); // class, string, method type, module, package
                case 9, 10, 11, 12, 17, 18 -> in.skipNBytes(4); // refs, name-and-type, dynamic, invokedynamic
                case 15 -> in.skipNBytes(3); // method handle
                default -> throw new IOException("unknown constant pool tag " + tag);
            }
        }
        return out;
    }
}
