package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every fenced block of README.md is checked: the endpoint example by
 * ConfigTest.readmeExampleIsCompiled, the Servlet and Cluster set-ups here (equal to
 * example/ServletExample.java and example/ClusterExample.java, which
 * build.sh compiles and ServletFilterTest and ClusterTest run),
 * the build commands against scripts/test.sh.
 */
class ReadmeTest {
    static final int ENDPOINT = 0, SERVLET = 1, CLUSTER = 2, BUILD = 3;

    /** The README's fenced blocks, each as "fence\nbody". */
    static List<String[]> blocks() throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        List<String[]> out = new ArrayList<>();
        int i = 0;
        while ((i = readme.indexOf("\n```", i)) >= 0) {
            int eol = readme.indexOf('\n', i + 1);
            int end = readme.indexOf("```", eol + 1);
            out.add(new String[] {readme.substring(i + 1, eol), readme.substring(eol + 1, end)});
            i = end + 3;
        }
        return out;
    }

    /** Asserts that block, each line indented by indent, is in file. */
    static void assertIndentedIn(String block, String indent, String file) throws Exception {
        StringBuilder indented = new StringBuilder();
        for (String line : block.split("\n")) indented.append(line.isEmpty() ? "" : indent + line).append('\n');
        assertTrue(Files.readString(Path.of(file)).contains(indented), "this README block is not in " + file + ":\n" + block);
    }

    @Test void everyBlockIsChecked() throws Exception {
        List<String> got = new ArrayList<>();
        for (String[] b : blocks()) got.add(b[0] + " " + b[1].split("\n")[0]);
        assertEquals(List.of(
            "```java Client rl = new Client(new Pool(\"127.0.0.1\", 6379),   // or new Cluster(\"10.0.0.1:6379\")",  // ConfigTest.readmeExampleIsCompiled
            "```java Client rl = new Client(new Pool(host, port),",  // servletBlockIsTheExample
            "```java Client rl = new Client(new Cluster(seeds, 0, null, password),   // seeds: any nodes; password null without one",  // clusterBlockIsTheExample
            "``` ./build.sh        # javac into build/classes, build/servlet-classes, build/example (only those are replaced)"),  // buildCommands
            got);
    }

    /** The Servlet block is example/ServletExample.java's register (ServletFilterTest runs it). */
    @Test void servletBlockIsTheExample() throws Exception {
        assertIndentedIn(blocks().get(SERVLET)[1], "        ", "example/ServletExample.java");
    }

    @Test void clusterBlockIsTheExample() throws Exception {
        assertIndentedIn(blocks().get(CLUSTER)[1], "        ", "example/ClusterExample.java");
    }

    /** ./build.sh builds what it says; "./build.sh test" is what scripts/test.sh runs. */
    @Test void buildCommands() throws Exception {
        String[] lines = blocks().get(BUILD)[1].split("\n");
        assertEquals(2, lines.length);
        assertTrue(lines[0].startsWith("./build.sh        # ") && lines[1].startsWith("./build.sh test   # "), String.join("\n", lines));
        assertTrue(Files.readString(Path.of("../../scripts/test.sh")).contains("(cd sdk/java && ./build.sh test)\n"));
        assertTrue(Files.readString(Path.of("build.sh")).contains("\nrm -rf build/classes build/servlet-classes build/test-classes build/example\n"));
        assertTrue(Files.isRegularFile(Path.of("build/classes/io/rlserver/Client.class")));
        assertTrue(Files.isRegularFile(Path.of("build/example/Example.class")));
        assertTrue(Files.isRegularFile(Path.of("build/example/ClusterExample.class")));
    }
}
