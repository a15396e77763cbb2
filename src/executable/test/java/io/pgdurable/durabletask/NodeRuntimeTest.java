package io.pgdurable.durabletask;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pgdurable.node.NodeRuntime;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NodeRuntime} on a simulated fresh machine: the PATH it searches has no node (or a fake one), and the
 * JavaScript directory is a copy of {@code src/executable/test/js} without {@code node_modules}. The download goes to the real
 * cache, so only the first run on a machine fetches Node.js.
 */
class NodeRuntimeTest {
    private static final String SDK = "node_modules/@microsoft/durabletask-js/package.json";
    private static final NodeRuntime.Requirement REQUIRED = NodeRuntime.requiredNode(JsSdkEndToEndTest.JS_DIR);

    @TempDir
    Path tmp;

    @Test
    void without_node_on_the_path_a_pinned_node_is_provisioned_and_the_packages_installed_once() throws Exception {
        Path js = copyOfJsDir(tmp.resolve("js"));
        Path cache = NodeRuntime.cacheDir();

        NodeRuntime.Node node = NodeRuntime.findOrProvisionNode(List.of(), cache, "Linux", "amd64", REQUIRED);
        assertTrue(node.provisioned(), node.actions().toString());
        assertTrue(node.path().startsWith(cache), node.path() + " is not in the cache " + cache);
        assertEquals("v" + NodeRuntime.NODE_VERSION, node.version());
        NodeRuntime.Runtime runtime = NodeRuntime.installPackages(node, js, List.of(), cache);
        assertTrue(runtime.actions().stream().anyMatch(a -> a.startsWith("npm ci")), runtime.actions().toString());
        assertTrue(runtime.actions().stream().noneMatch(a -> a.equals("npm from the PATH")),
                "a provisioned node must run the pinned npm: " + runtime.actions());
        String loaded = sdkLoads(runtime.node(), js);
        System.out.println("[NodeRuntimeTest] provisioned " + loaded + " (" + String.join("; ", runtime.actions())
                + ")");
        assertEquals(node.version() + " " + JsSdkEndToEndTest.SDK_VERSION + " function", loaded);

        Object unpacked = Files.readAttributes(node.path(), BasicFileAttributes.class).fileKey();
        NodeRuntime.Node again = NodeRuntime.findOrProvisionNode(List.of(), cache, "Linux", "amd64", REQUIRED);
        assertEquals(node.path(), again.path());
        assertTrue(again.actions().stream().noneMatch(a -> a.startsWith("downloaded")), again.actions().toString());
        assertEquals(unpacked, Files.readAttributes(again.path(), BasicFileAttributes.class).fileKey(),
                "the cached node was replaced");
        NodeRuntime.Runtime installed = NodeRuntime.installPackages(again, js, List.of(), cache);
        assertTrue(installed.actions().contains("packages already installed"), installed.actions().toString());
        assertTrue(installed.actions().stream().noneMatch(a -> a.startsWith("npm ci")), installed.actions().toString());

        Path manifest = js.resolve(SDK);
        Files.writeString(manifest, Files.readString(manifest).replace("\"version\": \"" + JsSdkEndToEndTest.SDK_VERSION
                + "\"", "\"version\": \"0.3.9\""));
        NodeRuntime.Runtime repaired = NodeRuntime.installPackages(again, js, List.of(), cache);
        assertTrue(repaired.actions().stream().anyMatch(a -> a.startsWith("npm ci")),
                "a package at another version than the lock file's was left: " + repaired.actions());
        assertEquals(node.version() + " " + JsSdkEndToEndTest.SDK_VERSION + " function", sdkLoads(repaired.node(), js));
    }

    @Test
    void the_required_node_is_the_highest_engines_minimum_in_the_lock_file() {
        assertEquals(22, REQUIRED.major(), REQUIRED.toString());
        assertEquals("Node.js 22 (@microsoft/durabletask-js " + JsSdkEndToEndTest.SDK_VERSION + " declares node "
                + ">=22.0.0)", REQUIRED.toString());
        assertEquals(6, NodeRuntime.minimumMajor("6.* || 8.* || >= 10.*"));
        assertEquals(12, NodeRuntime.minimumMajor("^12.20.0 || >=14"));
        assertEquals(0, NodeRuntime.minimumMajor("*"));
        assertEquals(0, NodeRuntime.minimumMajor("<18 || >=20"));
    }

    /** Node 20 runs `npm ci` with a warning only, then the SDK on an engine it does not support. */
    @Test
    void a_node_on_the_path_older_than_the_packages_need_is_passed_over_for_the_provisioned_one() throws Exception {
        Path bin = fakeNode("v20.20.2");
        NodeRuntime.Node node = NodeRuntime.findOrProvisionNode(List.of(bin), NodeRuntime.cacheDir(), "Linux",
                "amd64", REQUIRED);
        assertTrue(node.provisioned(), node.actions().toString());
        assertEquals("v" + NodeRuntime.NODE_VERSION, node.version());
        assertTrue(String.join(" ", node.actions()).contains("v20.20.2, older than Node.js 22 "
                + "(@microsoft/durabletask-js"), node.actions().toString());
    }

    @Test
    void a_node_as_new_as_the_packages_need_on_the_path_is_used_as_it_is() throws Exception {
        Path bin = fakeNode("v22.1.0");
        Path cache = tmp.resolve("unused-cache");
        NodeRuntime.Node node = NodeRuntime.findOrProvisionNode(List.of(bin), cache, "Linux", "amd64", REQUIRED);
        assertFalse(node.provisioned(), node.actions().toString());
        assertEquals(bin.resolve("node"), node.path());
        assertEquals("v22.1.0", node.version());
        assertFalse(Files.exists(cache), "nothing is provisioned when the PATH has a usable node");
    }

    @Test
    void on_another_architecture_without_node_it_fails_naming_the_architecture_and_what_to_install() {
        Path cache = tmp.resolve("cache");
        for (String[] platform : List.of(new String[] {"Linux", "aarch64"}, new String[] {"Mac OS X", "x86_64"})) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> NodeRuntime.findOrProvisionNode(List.of(), cache, platform[0], platform[1], REQUIRED));
            assertTrue(e.getMessage().contains(platform[0] + " " + platform[1]), e.getMessage());
            assertTrue(e.getMessage().contains("install Node.js 22+"), e.getMessage());
        }
        assertFalse(Files.exists(cache), "nothing may be downloaded for a platform the binary does not fit");
    }

    @Test
    void a_failing_npm_ci_fails_the_fixture_with_npms_own_account() throws Exception {
        NodeRuntime.Node node = NodeRuntime.findOrProvisionNode(NodeRuntime.systemPath(), NodeRuntime.cacheDir(),
                System.getProperty("os.name"), System.getProperty("os.arch"), REQUIRED);
        Path js = copyOfJsDir(tmp.resolve("js"));
        // package.json asks for a version the lock file does not pin (and the registry does not have): npm ci fails
        Path packageJson = js.resolve("package.json");
        Files.writeString(packageJson, Files.readString(packageJson).replace("\"@microsoft/durabletask-js\": \""
                + JsSdkEndToEndTest.SDK_VERSION + "\"", "\"@microsoft/durabletask-js\": \"0.3.0\""));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> NodeRuntime.installPackages(node, js, NodeRuntime.systemPath(), NodeRuntime.cacheDir()));
        assertTrue(e.getMessage().contains(" ci --prefix " + js) && e.getMessage().contains("failed with exit code"),
                e.getMessage());
        // npm's reason right after the command line, and no advice to install a Node.js that is there
        assertTrue(e.getMessage().contains("; npm said:\nnpm error"), "npm's own explanation is missing: "
                + e.getMessage());
        assertTrue(e.getMessage().contains("No matching version found for @microsoft/durabletask-js@0.3.0"),
                e.getMessage());
        assertFalse(e.getMessage().contains("install Node.js"), e.getMessage());
    }

    /** Download, sha512 check, tar and the rename into place, with the small npm tarball in a cache of its own. */
    @Test
    void a_tarball_is_unpacked_into_the_cache_in_one_rename_and_a_second_one_leaves_the_first() throws Exception {
        Path cache = tmp.resolve("cache");
        Path target = cache.resolve("npm-" + NodeRuntime.NPM_VERSION);
        List<String> members = List.of("package/bin/npm-cli.js", "package/package.json");
        NodeRuntime.unpack(NodeRuntime.NPM, cache, target, members, "a test", "nothing to install by hand");
        assertTrue(Files.readString(target.resolve("package.json")).contains("\"version\": \""
                + NodeRuntime.NPM_VERSION + "\""));
        Object first = Files.readAttributes(target.resolve("bin/npm-cli.js"), BasicFileAttributes.class).fileKey();
        NodeRuntime.unpack(NodeRuntime.NPM, cache, target, members, "a test racing the first",
                "nothing to install by hand");
        assertEquals(first, Files.readAttributes(target.resolve("bin/npm-cli.js"), BasicFileAttributes.class)
                .fileKey(), "the loser of a race replaced what the winner put in place");
        try (Stream<Path> left = Files.list(cache)) {
            assertEquals(List.of(target), left.toList(), "work directories were left in the cache");
        }
    }

    @Test
    void a_download_is_checked_against_its_pinned_sha512() throws Exception {
        Path file = tmp.resolve("abc");
        Files.writeString(file, "abc", StandardCharsets.US_ASCII);
        String abc = "sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw==";
        NodeRuntime.checkIntegrity(file, abc, "abc");
        Files.writeString(file, "abd", StandardCharsets.US_ASCII);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> NodeRuntime.checkIntegrity(file, abc, "abc"));
        assertTrue(e.getMessage().contains(abc) && e.getMessage().contains("is not what the registry published"),
                e.getMessage());
    }

    /** `node -e` in {@code js} loading the SDK: the node's version, the SDK's and the worker's type. */
    private static String sdkLoads(Path node, Path js) {
        NodeRuntime.Result r = NodeRuntime.run(List.of(node.toString(), "-e",
                "const sdk = require('@microsoft/durabletask-js');"
                        + "const v = require('@microsoft/durabletask-js/package.json').version;"
                        + "console.log(process.version + ' ' + v + ' ' + typeof sdk.TaskHubGrpcWorker)"),
                js, null, Duration.ofSeconds(60));
        assertEquals(0, r.exitCode(), r.output());
        return r.stdout().trim();
    }

    private Path fakeNode(String version) throws Exception {
        Path bin = Files.createDirectories(tmp.resolve("bin-" + version));
        // Written by a child process, not this JVM: an executable this JVM still had open for writing while another
        // test thread forked would fail to run with "Text file busy".
        NodeRuntime.Result r = NodeRuntime.run(List.of("/bin/sh", "-c", "printf '#!/bin/sh\\necho %s\\n' \"$0\" > node"
                + " && chmod 755 node", version), bin, null, Duration.ofSeconds(30));
        assertEquals(0, r.exitCode(), r.output());
        return bin;
    }

    private static Path copyOfJsDir(Path to) throws Exception {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(JsSdkEndToEndTest.JS_DIR)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, to.resolve(f.getFileName()));
            }
        }
        assertFalse(Files.exists(to.resolve("node_modules")));
        return to;
    }
}
