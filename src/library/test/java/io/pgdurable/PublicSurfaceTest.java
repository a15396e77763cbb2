package io.pgdurable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.postgres.PostgresProvider;
import io.pgdurable.postgres.ProviderInternals;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The library's public packages say what is public: no public or protected member of a class a user can reach in
 * them (a method's return, parameter and exception types, a field's type, a constructor's parameters, the class's
 * supertypes, type arguments and bounds included) names a type from {@code io.pgdurable.internal}, the engine that
 * may change in any release.
 */
class PublicSurfaceTest {
    private static final List<String> EXPORTED =
            List.of("io.pgdurable.spi", "io.pgdurable.postgres", "io.pgdurable.metrics", "io.pgdurable.longpoll");
    private static final String INTERNAL = "io.pgdurable.internal.";

    @Test
    void no_public_member_of_an_exported_package_exposes_an_internal_type() throws Exception {
        List<Class<?>> classes = exportedClasses();
        assertTrue(classes.contains(PostgresProvider.class) && classes.size() > 40,
                "read the exported classes (" + classes.size() + ")");
        List<String> exposed = new ArrayList<>();
        for (Class<?> c : classes) {
            if (reachable(c)) {
                exposed.addAll(internalTypesIn(c));
            }
        }
        assertEquals(List.of(), exposed, "public members that expose io.pgdurable.internal");
    }

    /** The check itself sees an internal type where one is exposed (the tests' own accessor returns the engine). */
    @Test
    void the_check_finds_an_exposed_internal_type() {
        List<String> found = internalTypesIn(ProviderInternals.class);
        assertEquals(1, found.size(), found.toString());
        assertTrue(found.get(0).contains("LongPoller"), found.toString());
    }

    /** Public, and every class it is nested in is public too. */
    private static boolean reachable(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getDeclaringClass()) {
            if (!Modifier.isPublic(k.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static List<String> internalTypesIn(Class<?> c) {
        List<String> found = new ArrayList<>();
        List<Type> supertypes = new ArrayList<>(List.of(c.getGenericInterfaces()));
        if (c.getGenericSuperclass() != null) {
            supertypes.add(c.getGenericSuperclass());
        }
        report(found, c.getName() + " extends/implements", supertypes.toArray(Type[]::new));
        report(found, c.getName() + " type parameters", c.getTypeParameters());
        for (Field f : c.getDeclaredFields()) {
            if (visible(f.getModifiers()) && !f.isSynthetic()) {
                report(found, c.getName() + "." + f.getName(), f.getGenericType());
            }
        }
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (visible(k.getModifiers()) && !k.isSynthetic()) {
                reportExecutable(found, c.getName() + ".<init>", k);
            }
        }
        for (Method m : c.getDeclaredMethods()) {
            if (visible(m.getModifiers()) && !m.isSynthetic() && !m.isBridge()) {
                reportExecutable(found, c.getName() + "." + m.getName(), m);
                report(found, c.getName() + "." + m.getName() + " returns", m.getGenericReturnType());
            }
        }
        return found;
    }

    private static void reportExecutable(List<String> found, String where, Executable e) {
        report(found, where + " parameters", e.getGenericParameterTypes());
        report(found, where + " throws", e.getGenericExceptionTypes());
        report(found, where + " type parameters", e.getTypeParameters());
    }

    private static void report(List<String> found, String where, Type... types) {
        Set<String> internal = new TreeSet<>();
        for (Type t : types) {
            collect(t, internal, new HashSet<>());
        }
        if (!internal.isEmpty()) {
            found.add(where + ": " + internal);
        }
    }

    private static void collect(Type t, Set<String> internal, Set<TypeVariable<?>> seen) {
        if (t instanceof Class<?> c) {
            while (c.isArray()) {
                c = c.getComponentType();
            }
            if (c.getName().startsWith(INTERNAL)) {
                internal.add(c.getName());
            }
        } else if (t instanceof ParameterizedType p) {
            collect(p.getRawType(), internal, seen);
            if (p.getOwnerType() != null) {
                collect(p.getOwnerType(), internal, seen);
            }
            for (Type a : p.getActualTypeArguments()) {
                collect(a, internal, seen);
            }
        } else if (t instanceof WildcardType w) {
            for (Type b : w.getUpperBounds()) {
                collect(b, internal, seen);
            }
            for (Type b : w.getLowerBounds()) {
                collect(b, internal, seen);
            }
        } else if (t instanceof GenericArrayType g) {
            collect(g.getGenericComponentType(), internal, seen);
        } else if (t instanceof TypeVariable<?> v && seen.add(v)) {
            for (Type b : v.getBounds()) {
                collect(b, internal, seen);
            }
        }
    }

    /** Every class (nested ones too) of the exported packages, read from where the library's classes were loaded. */
    private static List<Class<?>> exportedClasses() throws IOException, URISyntaxException, ClassNotFoundException {
        Path location = Path.of(PostgresProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(location)) {
            try (Stream<Path> files = Files.walk(location)) {
                files.map(p -> location.relativize(p).toString().replace('\\', '/')).forEach(names::add);
            }
        } else {
            try (JarFile jar = new JarFile(location.toFile())) {
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                    names.add(e.nextElement().getName());
                }
            }
        }
        List<Class<?>> classes = new ArrayList<>();
        for (String entry : names) {
            if (!entry.endsWith(".class") || entry.endsWith("module-info.class")) {
                continue;
            }
            String name = entry.substring(0, entry.length() - ".class".length()).replace('/', '.');
            String pkg = name.substring(0, name.lastIndexOf('.'));
            if (EXPORTED.contains(pkg)) {
                classes.add(Class.forName(name, false, PublicSurfaceTest.class.getClassLoader()));
            }
        }
        return classes;
    }
}
