package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The classpath of a reference implementation resolved from Maven Central by one of the
 * benchmarks' poms ({@code benchmarks/kafka-broker}: Apache Kafka's tools; {@code
 * benchmarks/java-broker}: the Java NameServer, broker and proxy 5.3.3), kept in that directory's
 * {@code target/classpath.txt}; and running a command to its end.
 */
final class ReferenceClasspath {
    private ReferenceClasspath() {
    }

    /** The classpath of {@code benchmarks/<dir>/pom.xml}, resolved on first use. */
    static String of(String dir) throws Exception {
        Path root = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        while (root != null && !Files.exists(root.resolve("benchmarks/" + dir + "/pom.xml"))) {
            root = root.getParent();
        }
        assertTrue(root != null, "benchmarks/" + dir + "/pom.xml above " + System.getProperty("user.dir"));
        Path pom = root.resolve("benchmarks/" + dir + "/pom.xml");
        Path out = root.resolve("benchmarks/" + dir + "/target/classpath.txt");
        if (!Files.exists(out) || Files.getLastModifiedTime(out).compareTo(Files.getLastModifiedTime(pom)) < 0) {
            run(List.of("mvn", "-q", "-B", "-ntp", "-f", pom.toString(),
                "dependency:build-classpath", "-Dmdep.outputFile=" + out), Duration.ofMinutes(5));
        }
        return Files.readString(out).trim();
    }

    /** Runs a command; its stdout and stderr, or an AssertionError unless it exits 0. */
    static String run(List<String> command, Duration max) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
            try (var in = p.getInputStream()) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                return "(cannot read: " + e + ")";
            }
        });
        if (!p.waitFor(max.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish within " + max);
        }
        String text = out.get(5, TimeUnit.SECONDS);
        assertEquals(0, p.exitValue(), command + "\n" + text);
        return text;
    }
}
