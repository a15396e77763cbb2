package io.pgdurable.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/**
 * The version of this build, as the pom states it: {@code version.properties} beside this class is filled in by
 * Maven's resource filtering, so the jar and a run from the compiled classes (the tests) both report it, and there
 * is no second place to keep in step.
 */
final class Version implements IVersionProvider {
    private static final String RESOURCE = "version.properties";
    private static final String NUMBER = load();

    /** The pom's version, e.g. {@code 0.1.0}. */
    static String number() {
        return NUMBER;
    }

    /** How the tool names itself in output: {@code pgdurable 0.1.0}. */
    static String tool() {
        return "pgdurable " + NUMBER;
    }

    @Override
    public String[] getVersion() {
        return new String[] {tool()};
    }

    private static String load() {
        Properties p = new Properties();
        try (InputStream in = Version.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing beside " + Version.class.getName()
                        + ": the build did not copy the resources");
            }
            p.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + RESOURCE + ": " + e.getMessage(), e);
        }
        String v = p.getProperty("version", "").trim();
        if (v.isEmpty() || v.contains("${")) {
            throw new IllegalStateException(RESOURCE + " holds no version ('" + v + "'): it is filled in by Maven's "
                    + "resource filtering, which this build did not run");
        }
        return v;
    }
}
