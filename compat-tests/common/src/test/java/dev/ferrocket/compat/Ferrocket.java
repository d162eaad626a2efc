package dev.ferrocket.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A ferrocket NameServer running as a child process: {@code <ferrocket.bin> namesrv -c <file>}.
 *
 * <p>The binary comes from the system property {@code ferrocket.bin} (absolute path). Each instance
 * gets its own directory under {@link TestDirs#root()} holding {@code namesrv.properties},
 * {@code kvConfig.json} and {@code ferrocket.log} (stdout and stderr), which stay after the run
 * for inspection. Ready = its TCP port accepts connections. Stop = SIGTERM, SIGKILL after 5 s.
 */
public final class Ferrocket implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(15);
    private static final Duration STOP_GRACE = Duration.ofSeconds(5);
    /** Every instance this JVM started, so a failed test can print their logs. */
    static final List<Ferrocket> STARTED = new CopyOnWriteArrayList<>();

    private final String name;
    private final Path dir;
    private final Path log;
    private final int port;
    private final Process process;
    final long startedNanos = System.nanoTime();

    private Ferrocket(String name, Path dir, Path log, int port, Process process) {
        this.name = name;
        this.dir = dir;
        this.log = log;
        this.port = port;
        this.process = process;
    }

    /** Default NameServer settings for tests; {@code overrides} replace or add keys. */
    public static Ferrocket startNamesrv(String name, Map<String, String> overrides) {
        Path bin = binary();
        Path dir = TestDirs.fresh("ferrocket-" + name);
        int port = Ports.free();
        Map<String, String> config = new LinkedHashMap<>();
        config.put("listenPort", Integer.toString(port));
        config.put("kvConfigPath", dir.resolve("kvConfig.json").toString());
        config.put("scanNotActiveBrokerInterval", "500");
        config.putAll(overrides);
        Path configFile = dir.resolve("namesrv.properties");
        Path log = dir.resolve("ferrocket.log");
        try {
            ConfigFiles.write(configFile, config);
            ProcessBuilder builder = new ProcessBuilder(bin.toString(), "namesrv", "-c", configFile.toString())
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile());
            if (System.getenv("RUST_LOG") == null) {
                builder.environment().put("RUST_LOG", System.getProperty("ferrocket.rustLog", "info"));
            }
            Process process = builder.start();
            Ferrocket ferrocket = new Ferrocket(name, dir, log, port, process);
            STARTED.add(ferrocket);
            ferrocket.awaitListening();
            return ferrocket;
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + bin + " namesrv -c " + configFile, e);
        }
    }

    /** The binary named by {@code -Dferrocket.bin}; fails fast with a usage message. */
    public static Path binary() {
        String value = System.getProperty("ferrocket.bin", "").trim();
        String usage = " Run: mvn -f compat-tests -B test -Dferrocket.bin=/abs/path/to/ferrocket";
        if (value.isEmpty()) {
            throw new IllegalStateException("system property ferrocket.bin is not set." + usage);
        }
        Path bin = Path.of(value);
        if (!bin.isAbsolute()) {
            throw new IllegalStateException("ferrocket.bin must be an absolute path, got '" + value + "'." + usage);
        }
        if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
            throw new IllegalStateException("ferrocket.bin=" + value + " is not an executable file." + usage);
        }
        return bin;
    }

    private void awaitListening() {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!process.isAlive()) {
                throw new IllegalStateException("ferrocket namesrv '" + name + "' exited with code "
                    + process.exitValue() + " before listening on port " + port + "\n" + logTail(60));
            }
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                Wait.sleep(50);
            }
        }
        close();
        throw new IllegalStateException("ferrocket namesrv '" + name + "' did not accept connections on port "
            + port + " within " + START_TIMEOUT.toSeconds() + " s\n" + logTail(60));
    }

    /** {@code 127.0.0.1:<port>}, the value for {@code namesrvAddr}. */
    public String addr() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    public Path dir() {
        return dir;
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** Fails if the process has died: a crash must not pass for a missing route. */
    public void assertAlive() {
        if (!process.isAlive()) {
            throw new AssertionError("ferrocket namesrv '" + name + "' died with exit code "
                + process.exitValue() + "\n" + logTail(60));
        }
    }

    /** The last {@code lines} lines of its log, with a header naming the file. */
    public String logTail(int lines) {
        List<String> all;
        try {
            all = Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
        List<String> tail = new ArrayList<>(all.subList(Math.max(0, all.size() - lines), all.size()));
        String state = process.isAlive() ? "running" : "exited " + process.exitValue();
        return "---- last " + tail.size() + " of " + all.size() + " lines of " + log + " (" + state + ") ----\n"
            + String.join("\n", tail) + "\n---- end of ferrocket log ----";
    }

    @Override
    public void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                System.err.println("[compat] ferrocket '" + name + "' ignored SIGTERM for "
                    + STOP_GRACE.toSeconds() + " s, killing it");
                process.destroyForcibly().waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }

    @Override
    public String toString() {
        return "ferrocket namesrv '" + name + "' at " + addr() + " (" + dir + ")";
    }
}
