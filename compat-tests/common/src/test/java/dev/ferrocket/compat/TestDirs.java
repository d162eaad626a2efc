package dev.ferrocket.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/** Working directories below the module's target/ (kept after the run for inspection). */
public final class TestDirs {
    private static final AtomicInteger SEQ = new AtomicInteger();

    private TestDirs() {
    }

    /** {@code -Dcompat.workDir}, set by the pom to {@code target/compat-work}. */
    public static Path root() {
        String value = System.getProperty("compat.workDir", "").trim();
        return Path.of(value.isEmpty() ? "target/compat-work" : value).toAbsolutePath();
    }

    /** A new, empty directory whose name starts with {@code prefix}. */
    public static Path fresh(String prefix) {
        Path dir = root().resolve(prefix + "-" + ProcessHandle.current().pid() + "-" + SEQ.incrementAndGet());
        try {
            if (Files.exists(dir)) {
                deleteRecursively(dir);
            }
            return Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dir, e);
        }
    }

    static void deleteRecursively(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
